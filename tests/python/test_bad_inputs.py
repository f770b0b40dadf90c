import pathlib

import pytest

import bronze
from bad_inputs import CASES, render

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "bad-inputs.md"


@pytest.mark.parametrize("entry,what,call,exc,words", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_bad_input_raises_clearly(entry, what, call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)
    bronze.synchronize()  # the runtime is still usable
    assert bronze.ones(2).numpy().tolist() == [1.0, 1.0]


def test_document_matches_the_table():
    assert DOC.read_text() == render(), "docs/bad-inputs.md is stale: python tests/python/bad_inputs.py > docs/bad-inputs.md"
