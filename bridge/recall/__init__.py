"""The recall pipeline; `pipeline.py` draws its stages."""
