"""The adapters' id patterns match whole values only: `$` also matches before a final newline, so
`alice\\n` used to pass the checks guarding URI segments, header values and record ids."""

from __future__ import annotations

import re

import pytest

from adapters.shared import envelope
from adapters.openviking import capture as ov_capture
from adapters.openviking import mapping as ov_mapping
from adapters.viking import rows as vk_rows
from adapters.viking import mapping as vk_mapping

PATTERNS = {
    "envelope.MEMORY_ID": (envelope.MEMORY_ID, "m" + "0" * 32),
    "viking.rows.EXTRACTED_ID": (vk_rows.EXTRACTED_ID, "xabc"),
    "viking.mapping.VIKING_ID": (vk_mapping.VIKING_ID, "vbu_alice"),
    "viking.mapping._PREFIX": (vk_mapping._PREFIX, "vbu"),
    "openviking.capture._SESSION_ID": (ov_capture._SESSION_ID, "vb-" + "0" * 40),
    "openviking.capture._ARCHIVE": (ov_capture._ARCHIVE, "archive_1"),
    "openviking.mapping.OV_NAME": (ov_mapping.OV_NAME, "alice"),
    "openviking.mapping._NAMESPACE": (ov_mapping._NAMESPACE, "vb"),
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_an_id_pattern_refuses_a_value_with_a_trailing_newline(name: str) -> None:
    pattern, valid = PATTERNS[name]
    assert isinstance(pattern, re.Pattern) and pattern.match(valid), f"{name}: premise, {valid!r} is valid"
    assert not pattern.match(valid + "\n"), f"{name} accepts {valid + chr(10)!r}"
