import json

import pytest

import bronze
from bronze import profiler


def test_modes_and_errors(tmp_path):
    with pytest.raises(ValueError):
        profiler.start(mode="bogus")
    with pytest.raises(RuntimeError):
        profiler.start(mode="bogus")
    with pytest.raises(RuntimeError):
        profiler.stop()
    profiler.start(mode="Interval, Event")
    with pytest.raises(RuntimeError):
        profiler.start()
    with pytest.raises(ValueError):  # ProfilerError is both
        profiler.start()
    path = profiler.stop(tmp_path / "t.json")
    assert path.endswith("t.json")


def test_trace_is_chrome_json(tmp_path):
    out = tmp_path / "trace.json"
    with profiler.profile("interval,event", path=out):
        x = bronze.rand(1 << 16)
        y = x + 1
        y.numpy()
    trace = json.loads(out.read_text())
    events = trace["traceEvents"]
    names = {e["name"] for e in events}
    assert {"philox", "add", "copy_d2h"} <= names
    intervals = [e for e in events if e.get("ph") == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in intervals)
    assert any(e.get("ph") == "i" and e["name"] == "add completed" for e in events)
    assert any(e.get("ph") == "C" and e["name"] == "memory" for e in events)
    assert any(e.get("ph") == "M" and e["name"] == "process_name" for e in events)


def test_profile_stops_on_exception(tmp_path):
    with pytest.raises(KeyError):
        with profiler.profile(path=tmp_path / "x.json"):
            raise KeyError("boom")
    assert not profiler.is_running()
    assert (tmp_path / "x.json").exists()


def test_a_trace_stop_cannot_write_is_kept_for_another_path(tmp_path):
    profiler.start()
    (bronze.rand(1 << 12) * 2).numpy()
    bad = tmp_path / "no-such-folder" / "t.json"
    with pytest.raises(bronze.BronzeError, match=f"cannot write the trace to '{bad}'.*stop\\(path=") as e:
        profiler.stop(bad)
    assert "No such file" in str(e.value)
    assert not profiler.is_running()
    good = tmp_path / "t.json"
    assert profiler.stop(good) == str(good)
    assert {"philox", "mul", "copy_d2h"} <= {ev["name"] for ev in json.loads(good.read_text())["traceEvents"]}
    with pytest.raises(bronze.ProfilerError, match="not running"):  # written: nothing kept
        profiler.stop(good)
    profiler.start()
    bronze.rand(1 << 12).numpy()
    with pytest.raises(bronze.BronzeError):
        profiler.stop(bad)
    profiler.start()  # a new session drops the kept trace
    profiler.stop(good)
    assert "philox" not in {ev["name"] for ev in json.loads(good.read_text())["traceEvents"]}


def test_wait_until_completed_serializes(tmp_path):
    out = tmp_path / "s.json"
    profiler.start("interval", wait_until_completed=True)
    for _ in range(5):
        bronze.rand(1 << 15)
    profiler.stop(out)
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in json.loads(out.read_text())["traceEvents"] if e.get("ph") == "X")
    for (s0, e0), (s1, _) in zip(spans, spans[1:]):
        assert s1 >= e0 - 1e-3  # no overlap


def test_metal_capture(tmp_path, monkeypatch):
    monkeypatch.delenv("BRONZE_CAPTURE_ENABLED", raising=False)
    monkeypatch.delenv("MTL_CAPTURE_ENABLED", raising=False)
    assert not profiler.is_metal_capture_enabled()
    with pytest.raises(RuntimeError):
        with profiler.metal_capture(tmp_path / "c"):
            pass
    monkeypatch.setenv("BRONZE_CAPTURE_ENABLED", "1")
    assert profiler.is_metal_capture_enabled()
    with profiler.metal_capture(tmp_path / "c.jsonl"):
        assert profiler.is_capturing_metal()
        bronze.ones(8)
    assert not profiler.is_capturing_metal()
    lines = (tmp_path / "c.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"bronze_capture": 1}
    assert any(json.loads(l).get("op") == "fill" for l in lines[1:])


def test_a_stop_that_another_thread_beat_raises_profiler_error(monkeypatch, tmp_path):
    # N50: of two threads stopping at once, the one that had found the
    # profiler running got a BronzeError from the stop itself. The stop
    # checks once, where it stops.
    import threading

    for _ in range(20):
        profiler.start()
        start, errors = threading.Barrier(2), []

        def stop(path):
            start.wait()
            try:
                profiler.stop(path)
            except Exception as e:  # noqa: BLE001  (checked below)
                errors.append(e)

        threads = [threading.Thread(target=stop, args=(tmp_path / f"{k}.json",)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(errors) == 1 and isinstance(errors[0], bronze.ProfilerError), errors
    # The moment between the two, made certain: found running, then stopped by another.
    monkeypatch.setattr(bronze._C, "_profiler_is_running", lambda: True)
    with pytest.raises(bronze.ProfilerError, match="not running"):
        profiler.stop()
