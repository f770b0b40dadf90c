import inspect
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


def _entry_points():
    """Every public callable of bronze, Tensor, Stream, Event and device."""
    t, s, e = bronze.ones(4), bronze.Stream(), bronze.Event()
    found = {n: getattr(bronze, n) for n in dir(bronze)
             if not n.startswith("_") and callable(getattr(bronze, n)) and not inspect.ismodule(getattr(bronze, n))}
    for prefix, obj in (("Tensor.", t), ("Stream.", s), ("Event.", e)):
        for n in dir(type(obj)):
            if n.startswith("_"):
                continue
            try:
                f = getattr(obj, n)
            except Exception:  # a property that needs another shape (t.T on 1-d)
                continue
            if callable(f):
                found[prefix + n] = f
    return found


def test_no_entry_point_answers_with_a_signature_dump():
    dumps = []
    for name, f in sorted(_entry_points().items()):
        # None and a str without a UTF-8 form (N25) once reached nanobind unchecked.
        for args in [(object(),) * 7, (object(),), (None,), ("\udcff",)]:
            try:
                f(*args)
            except TypeError as ex:
                if "incompatible function arguments" in str(ex) or "\n" in str(ex):
                    dumps.append(f"{name}{len(args)}: {ex}")
            except BaseException:  # other refusals are the table's business
                pass
    try:
        bronze.synchronize()
    except bronze.DeviceError:
        pass
    assert dumps == []
