"""The `bronze` command line refuses bad input with one line on stderr and exit
status 2, never a traceback (N31)."""

import json
import os
import subprocess
import sys

import pytest

import bronze
from bronze.__main__ import main

SEED = "kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) { out[idx] = val; }"


def refused(argv, capsys, words):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith(f"bronze {' '.join(argv[:2 if argv[0] == 'capture' else 1])}: "), err
    assert words in err, err


@pytest.mark.parametrize("output, words", [("/nonexistent/k.bronzelib", "No such file or directory"),
                                           ("folder", "Is a directory"),
                                           ("/dev/full", "No space left on device")])
def test_compile_to_an_output_it_cannot_write(output, words, tmp_path, capsys):
    src = tmp_path / "k.metal"
    src.write_text(SEED)
    (tmp_path / "folder").mkdir()
    out = output if output.startswith("/") else str(tmp_path / output)
    refused(["compile", str(src), "-o", out], capsys, f"cannot write {out}: {words}")


@pytest.mark.parametrize("argv, line", [
    ([], "bronze: the following arguments are required: command (see bronze --help)"),
    (["nope"], "bronze: argument command: invalid choice: 'nope'"),
    (["compile"], "bronze compile: the following arguments are required: FILE (see bronze compile --help)"),
    (["info", "--bogus"], "bronze info: unrecognized arguments: --bogus (see bronze info --help)"),
    (["capture", "show", "x", "y"], "bronze capture show: unrecognized arguments: y (see bronze capture show --help)"),
    (["compile", "k.metal", "--math-mode", "exact"], "bronze compile: argument --math-mode: invalid choice: 'exact'"),
    (["check", "k.metal", "--jobs", "0"], "bronze check: argument --jobs: a whole number >= 1, got '0'"),
    (["check", "k.metal", "--jobs", "two"], "bronze check: argument --jobs: a whole number >= 1, got 'two'"),
])
def test_usage_errors_are_one_line(argv, line, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(line), err


@pytest.mark.parametrize("command", ["compile", "check"])
@pytest.mark.parametrize("option, words", [(["-I", "/nonexistent"], "include_dirs: no folder '/nonexistent'"),
                                           (["-D", "=1"], "defines: '' is not a macro name")])
def test_a_bad_option_is_refused_once_not_as_each_files_failure(command, option, words, tmp_path, capsys):
    files = [tmp_path / "a.metal", tmp_path / "b.metal"]
    for f in files:
        f.write_text(SEED)
    refused([command, *map(str, files), *option], capsys, words)
    assert not list(tmp_path.glob("*.bronzelib"))


@pytest.mark.parametrize("device, words", [("gpu", "invalid device 'gpu'"),
                                           ("sm_x", "a GPU architecture is 'sm_90' or 90, got 'sm_x'")])
def test_check_refuses_a_bad_device(device, words, tmp_path, capsys):
    (tmp_path / "k.metal").write_text(SEED)
    refused(["check", str(tmp_path), "--device", device], capsys, words)


def test_compile_refuses_a_bad_arch(tmp_path, capsys):
    (tmp_path / "k.metal").write_text(SEED)
    refused(["compile", str(tmp_path / "k.metal"), "--arch", "volta"], capsys, "a GPU architecture is 'sm_90' or 90, got 'volta'")


def test_compile_refuses_what_is_no_utf8_text_file(tmp_path, capsys):
    (tmp_path / "folder.metal").mkdir()
    latin1 = tmp_path / "latin1.metal"
    latin1.write_bytes(b"// caf\xe9\n" + SEED.encode())
    refused(["compile", str(tmp_path / "missing.metal")], capsys, f"no such file: {tmp_path / 'missing.metal'}")
    refused(["compile", str(tmp_path / "folder.metal")], capsys, f"not a regular file: {tmp_path / 'folder.metal'}")
    refused(["compile", str(latin1)], capsys, f"{latin1} is not UTF-8 text (byte 0xe9 at offset 6)")


def test_console_script_refusal_has_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "bronze", "compile", str(tmp_path / "missing.metal")],
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"bronze compile: no such file: {tmp_path / 'missing.metal'}\n")


def test_info_with_a_bad_setting_names_it():
    r = subprocess.run([sys.executable, "-m", "bronze", "info"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, BRONZE_CACHE_MAX_BYTES="lots"))
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr == "bronze info: $BRONZE_CACHE_MAX_BYTES='lots' is not a size (e.g. 4G, 512M, 1073741824)\n"


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """A real capture's records: the header, the library, one kernel."""
    path = tmp_path_factory.mktemp("capture") / "cap.jsonl"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("BRONZE_CAPTURE_ENABLED", "1")
        lib, x = bronze.compile_shader(SEED), bronze.zeros(4)
        with bronze.profiler.metal_capture(path):
            lib.full(x, 2.0)
    return [json.loads(line) for line in path.read_text().splitlines()]


def _kernel(**fields):
    return lambda records: records[2].update(fields)


def _arg(i, **fields):
    return lambda records: records[2]["args"][i].update(fields)


# Doctored captures `replay` once answered with a traceback (the note's 11).
DOCTORED = {
    "unsupported dtype": (_arg(0, dtype="complex64"), "3: unsupported dtype 'complex64'"),
    "bytes_hex of the wrong size": (_arg(1, bytes_hex="00"), "3: argument 1 ('val', float) is one value of 4 bytes, got 1"),
    "group 0": (_kernel(group=[0, 1, 1]), "3: group_size must be positive"),
    "a 2^62-byte buffer": (_arg(0, bytes=1 << 62), "3: bronze: out of memory"),
    "a buffer past int64": (_arg(0, bytes=1 << 70), "3: shape entry"),
    "bytes no whole number of its dtype": (_arg(0, bytes=3), "3: 3 bytes are no whole number of bronze.float32"),
    "kernel __class__": (_kernel(kernel="__class__"), "3: the library has no kernel '__class__'"),
    "kernel kernel_names": (_kernel(kernel="kernel_names"), "3: the library has no kernel 'kernel_names'"),
    "kernel specialize": (_kernel(kernel="specialize"), "3: the library has no kernel 'specialize'"),
    "an unknown kernel": (_kernel(kernel="nope"), "3: the library has no kernel 'nope'"),
    "an outside #include": (lambda r: r[1].update(source='#include "/etc/hostname"\n' + r[1]["source"]),
                            "2: shader.metal:1:10: error: \"/etc/hostname\" reaches outside"),
}


@pytest.mark.parametrize("doctor, words", DOCTORED.values(), ids=DOCTORED.keys())
def test_replay_of_a_doctored_capture(doctor, words, capture, tmp_path, capsys):
    records = json.loads(json.dumps(capture))
    doctor(records)
    path = tmp_path / "doctored.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    refused(["capture", "replay", str(path)], capsys, f"{path}:{words}")


@pytest.mark.parametrize("action", ["show", "replay"])
@pytest.mark.parametrize("first", [False, True])
def test_deeply_nested_json(action, first, tmp_path, capsys):
    # Was a RecursionError traceback.
    path = tmp_path / "deep.jsonl"
    deep = "[" * 100000 + "]" * 100000 + "\n"
    path.write_text(deep if first else '{"bronze_capture":1}\n' + deep)
    refused(["capture", action, str(path)], capsys,
            f"{path}: not a bronze capture file" if first else f"{path}:2: not a capture record")


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == f"bronze {bronze.__version__}\n"


def test_compile_several_files_each_to_its_library(tmp_path, capsys):
    a, b, bad = tmp_path / "a.metal", tmp_path / "b.metal", tmp_path / "bad.metal"
    a.write_text(SEED)
    b.write_text(SEED.replace("full", "fill"))
    bad.write_text("kernel void k(device float* o) { o[0] = nope; }\n")
    assert main(["compile", str(a), str(b)]) == 0
    assert bronze.load_metallib(str(tmp_path / "a.bronzelib")).kernel_names == ["full"]
    assert bronze.load_metallib(str(tmp_path / "b.bronzelib")).kernel_names == ["fill"]
    capsys.readouterr()
    assert main(["compile", str(bad), str(a)]) == 1  # the others are still compiled
    out, err = capsys.readouterr()
    assert "a.bronzelib" in out and "bad.metal:1:" in err
    refused(["compile", str(a), str(b), "-o", str(tmp_path / "x.bronzelib")], capsys, "-o names the output of one file")
