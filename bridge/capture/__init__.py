"""Capture: what was said (a memory's content, or a conversation's messages) turned into memory
candidates. Extraction proposes kinds and texts; where a candidate may be written is the write
policy's decision (`bridge/policy/`), never the extractor's."""
