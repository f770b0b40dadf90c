"""Checking folders of .metal files, each compiled in a process of its own
(a crash is that file's failure): `bronze check` and scripts/corpus-check."""

import concurrent.futures
import json
import os
import subprocess
import sys

# One file, in a child process: prints a JSON line.
_CHILD = r"""
import json, sys, time
import bronze
path, device, dirs, defines, build_all = (sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]),
                                          sys.argv[5] == "1")
t0 = time.time()
r = {"ok": False, "kernels": 0}
try:
    src = open(path, encoding="utf-8", errors="replace").read()  # bytes past UTF-8 (in comments) as Metal passes them
    names = bronze.find_kernels(src, filename=path, include_dirs=dirs, defines=defines)
    r["kernels"] = len(names)
    if device.startswith("sm_"):  # NVRTC for that architecture, no GPU needed (plus this host's CPU object)
        bronze.compile_library(src, filename=path, archs=[device], include_dirs=dirs, defines=defines)
    else:
        t = time.time()
        lib = bronze.compile_shader(src, filename=path, device=device, include_dirs=dirs, defines=defines)
        r["check_seconds"] = round(time.time() - t, 2)
        if names:
            t = time.time()
            lib._kernel(names[0]).warmup()
            r["first_kernel_seconds"] = round(time.time() - t, 2)
        if build_all:
            lib.warmup()
    r["ok"] = True
except Exception as e:
    r["error"] = type(e).__name__ + ": " + str(e)
r["seconds"] = round(time.time() - t0, 2)
print(json.dumps(r))
"""


def parse_defines(defines):
    """-D options (NAME or NAME=VALUE) as a dict of macros, as MTLCompileOptions' preprocessorMacros."""
    return dict(d.split("=", 1) if "=" in d else (d, "1") for d in defines)


def metal_files(paths):
    """The .metal files under `paths` (files as given, folders searched), sorted;
    ValueError for a path that does not exist."""
    files = []
    for p in paths:
        if os.path.isfile(p):
            files.append(p)
        elif os.path.isdir(p):
            files += [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.endswith(".metal")]
        else:
            raise ValueError(f"no such file or folder: {p}")
    return sorted(files)


def check_file(path, device="cpu", include_dirs=(), defines=(), build_all=False, timeout=1800, env=None):
    """Compiles `path` in a child process: a dict with ok, kernels, seconds,
    check_seconds and first_kernel_seconds (compile_shader's check and its
    first kernel's build), or error."""
    cmd = [sys.executable, "-c", _CHILD, path, device, json.dumps([os.path.abspath(d) for d in include_dirs]),
           json.dumps(dict(defines)), "1" if build_all else "0"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "kernels": 0, "error": f"Timeout: compile took over {timeout} s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"ok": False, "kernels": 0, "error": f"Crash: exit {p.returncode}: {p.stderr.strip()[-300:]}"}


def check_files(files, jobs, on_result=None, **options):
    """check_file over `files`, `jobs` at once: {path: result}; on_result(path,
    result) as each finishes."""
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(check_file, f, **options): f for f in files}
        for fut in concurrent.futures.as_completed(futures):
            f = futures[fut]
            results[f] = fut.result()
            if on_result:
                on_result(f, results[f])
    return results


def error_line(message):
    """The first line that says what went wrong."""
    lines = message.splitlines()
    for line in lines:
        if "error" in line.lower():
            return line.strip()
    return lines[0] if lines else "(no message)"


def junit_xml(results, name="bronze check"):
    """The results as a JUnit XML report (one test case per file)."""
    import xml.etree.ElementTree as ET

    failed = sum(not r["ok"] for r in results.values())
    suite = ET.Element("testsuite", name=name, tests=str(len(results)), failures=str(failed), errors="0",
                       time=f"{sum(r.get('seconds', 0) for r in results.values()):.2f}")
    for path, r in sorted(results.items()):
        case = ET.SubElement(suite, "testcase", classname="metal", name=path, time=str(r.get("seconds", 0)))
        if not r["ok"]:
            ET.SubElement(case, "failure", message=error_line(r["error"])).text = r["error"]
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode")
