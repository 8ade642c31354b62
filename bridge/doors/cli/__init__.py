"""The `viking-bridge` command: local mode (`main.py`, a bridge opened from the settings), client
mode against a running service (`remote.py`), and the demos (`demo.py`, `demo_multiagent.py` with
seed 002's phase-7 data in `scenario.py`)."""
