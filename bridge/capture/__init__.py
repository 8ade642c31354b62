"""Capture: what was said, kept whole (`segment`), and what counts as evidence of a kind of
memory, in Chinese and English (`rules`). The matcher that applies the rules is
`bridge/extract.py`."""
