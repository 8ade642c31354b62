"""Capture: what was said (a memory's content, or a conversation's messages) turned into memory
candidates, kept whole.

    segment.py   sentences, never cut inside dotted names, versions, numbers, URLs, file names,
                 abbreviations or CJK punctuation
    rules.py     what counts as evidence of a kind of memory, in Chinese and English (data)
    extract.py   the matcher that applies the rules (`RuleExtractor`, `classify`)

Extraction proposes kinds and texts; where a candidate may be written is the write policy's
decision (`bridge/policy/`), never the extractor's.
"""
