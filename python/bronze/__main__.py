"""The bronze command line.

    bronze info                    devices, backends, compiler and cache
    bronze compile FILE.metal... [-o FILE.bronzelib] [--arch sm_90] [-I DIR] [-D NAME=VALUE] [--math-mode safe]
                                   compile ahead of time, each file to its .bronzelib
    bronze --version
    bronze check PATH... [-I DIR] [-D NAME=VALUE] [--device cpu|cuda|sm_90] [--jobs N] [--json F] [--junit F]
                                   compile every .metal file under PATH; exit 1 if any fails
    bronze metallib-info FILE [--kernel NAME]... [--json F]
                                   what an Apple .metallib holds: its kernels' reflection, the air.* intrinsics
    bronze capture show FILE       list the commands of a capture file
    bronze capture replay FILE     run a capture's kernels again
"""

import argparse
import json
import os
import sys


class _Refused(Exception):
    """Input the command refuses (a file, a setting): one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse's refusals (an unknown command or option, a missing or bad
    argument) as one line, as the commands' own, rather than the usage and a
    line."""

    def error(self, message):
        raise _Refused(f"{self.prog}: {message} (see {self.prog} --help)")


def _info(args):
    import bronze

    # Every line first, then the report: a bad $BRONZE_* setting (a ValueError
    # naming it) is the one line said instead.
    try:
        lines = list(_info_lines(bronze))
    except (ValueError, bronze.BronzeError) as e:
        raise _Refused(e) from None
    print("\n".join(lines))
    return 0


def _info_lines(bronze):
    yield f"bronze {bronze.__version__}"
    for d in bronze.devices():
        p = bronze.get_device_properties(d)
        yield (f"  {d}: {p.name}, {p.total_memory / 2**30:.1f} GiB, "
               f"recommended max {p.recommended_max_memory / 2**30:.1f} GiB, "
               f"{p.multi_processor_count} {'threads' if d.type == 'cpu' else 'SMs'}")
    yield f"  cuda: {bronze.cuda_status()}"
    yield f"  current device: {bronze.current_device()}"
    limit = bronze.kernel_time_limit()
    yield f"  CPU kernel time limit: {f'{limit:g} s' if limit else 'none'}"
    yield f"  BLAS (mm on the CPU): {bronze._C._blas_status()}"
    c = bronze.cache_info()
    h = bronze._C._host_compiler(check=True)
    yield _compiler_line(h)
    if c["preprocessor"]:
        yield f"  Metal front end: {c['preprocessor']} -E (the C preprocessor), Metal 3.2's predefined macros"
    elif h["chosen_by"]:
        yield f"  Metal front end: no C preprocessor: {h['chosen_by']} names none that works (above)"
    else:
        yield "  Metal front end: no C preprocessor: compile_shader needs one; install g++ (or cpp alone for CUDA)"
    torch_inc = bronze._torch_include_dir()
    yield f"  PyTorch Metal headers (<c10/metal/...>): {torch_inc + '/c10/metal' if torch_inc else 'none (torch not installed)'}"
    yield f"  LLVM (Apple .metallib files): {bronze._C._llvm_status()}"
    yield f"  compile cache: {c['status']}"
    yield f"  log (BRONZE_LOG): {bronze._C._log_level()}"
    yield f"  metal_capture: {'enabled' if bronze.profiler.is_metal_capture_enabled() else 'off (BRONZE_CAPTURE_ENABLED=1 enables it)'}"


def _compiler_line(h):
    """Which host compiler, what it is (found by running it) and whether it builds kernels."""
    if not h["path"]:
        return f"  shader compiler (CPU): none: {h['status']}"
    if not h["works"]:
        return f"  shader compiler (CPU): does NOT work: {h['problem']}"
    chosen = f", from {h['chosen_by']}" if h["chosen_by"] else ""
    return f"  shader compiler (CPU): {h['path']} ({h['kind']} {h['version']}{chosen}): works"


def _compile(args):
    import bronze

    if args.output and len(args.files) > 1:
        raise _Refused("-o names the output of one file; several files each get FILE.bronzelib")
    # Regular files, read as UTF-8: never a device (/dev/zero reads forever,
    # /dev/stdin would name the output), a folder or another encoding.
    sources = []
    for path in args.files:
        if not os.path.isfile(path):
            raise _Refused(f"not a regular file: {path}" if os.path.exists(path) else f"no such file: {path}")
        try:
            with open(path, encoding="utf-8") as f:
                sources.append(f.read())
        except OSError as e:
            raise _Refused(f"cannot read {path}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise _Refused(f"{path} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})") from None
    from ._check import parse_defines

    defines = parse_defines(args.define)
    status = 0
    for path, source in zip(args.files, sources):
        out = args.output or os.path.splitext(path)[0] + ".bronzelib"
        try:
            data = bronze.compile_library(source, filename=path, archs=args.arch, include_dirs=args.include,
                                          defines=defines, math_mode=args.math_mode)
        except (bronze.ShaderCompileError, bronze.NotSupportedError) as e:
            print(e, file=sys.stderr)
            status = 1
            continue
        except ValueError as e:  # an option (-I, -D, --arch, a $BRONZE_* setting): every file's, so refused once
            raise _Refused(e) from None
        try:  # a folder, a missing or read-only folder, a full disk (/dev/full)
            with open(out, "wb") as f:
                f.write(data)
        except OSError as e:
            raise _Refused(f"cannot write {out}: {e.strerror}") from None
        lib = bronze.load_metallib(data)
        print(f"{out}: {len(data)} bytes, kernels: {', '.join(lib.kernel_names) or '(none)'}")
    return status


def _check(args):
    from . import _check as check

    try:
        files = check.metal_files(args.paths)
    except ValueError as e:
        raise _Refused(e) from None
    if not files:
        raise _Refused(f"no .metal files under {', '.join(args.paths)}")
    defines = check.parse_defines(args.define)
    import bronze

    # The options (and $BRONZE_* settings) are every file's: a bad one is
    # refused once, here, rather than reported as each file's failure.
    try:
        if args.device.startswith("sm_"):
            bronze._arch_number(args.device)
        else:
            bronze.device(args.device)
        bronze.find_kernels("", include_dirs=args.include, defines=defines)
    except ValueError as e:
        raise _Refused(e) from None

    def line(path, r):
        if r["ok"]:
            n = r["kernels"]
            print(f"PASS {path} ({n} kernel{'' if n == 1 else 's'}, {r.get('seconds', 0):.1f} s)", flush=True)
        else:
            print(f"FAIL {path}: {check.error_line(r['error'])}", flush=True)

    results = check.check_files(files, args.jobs, line, device=args.device, include_dirs=args.include,
                                defines=defines, build_all=args.build_all)
    failed = sorted(f for f, r in results.items() if not r["ok"])
    for path, out in ((args.json, lambda f: json.dump(results, f, indent=1)),
                      (args.junit, lambda f: f.write(check.junit_xml(results)))):
        if path:
            try:
                with open(path, "w") as f:
                    out(f)
            except OSError as e:
                raise _Refused(f"cannot write {path}: {e.strerror}") from None
    print(f"bronze check: {len(files)} files, {len(files) - len(failed)} passed, {len(failed)} failed"
          + (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


# Each kind of capture record (told apart by its first field) and its fields' types.
_CAPTURE_RECORDS = (
    {"source": str, "library": str},
    {"kernel": str, "library": str, "stream": int, "grid": list, "group": list, "args": list},
    {"op": str, "category": str, "device": str, "stream": int},
)


def _hex(s):
    try:
        bytes.fromhex(s)
        return True
    except ValueError:
        return False


def _buffer_arg_ok(a):
    return (isinstance(a, dict) and type(a.get("buffer")) is int and type(a.get("bytes")) is int and a["bytes"] >= 0
            and isinstance(a.get("dtype"), str))


def _capture_arg_ok(a):
    if not isinstance(a, dict):
        return False
    if "argument_buffer" in a:  # its entries are buffers, never argument buffers again
        b = a["argument_buffer"]
        return isinstance(b, list) and len(b) > 0 and all(_buffer_arg_ok(x) for x in b)
    if "buffer" in a:
        return _buffer_arg_ok(a)
    return isinstance(a.get("bytes_hex"), str) and _hex(a["bytes_hex"])


def _capture_record_ok(r, libraries):
    """True for a well-formed record; a kernel's library must come before it."""
    if type(r.get("seq")) is not int:
        return False
    for fields in _CAPTURE_RECORDS:
        if next(iter(fields)) in r:
            break
    else:
        return False
    if not all(type(r.get(k)) is t for k, t in fields.items()):
        return False
    if "source" in r:
        libraries.add(r["library"])
    elif "kernel" in r:
        return (r["library"] in libraries and len(r["grid"]) == len(r["group"]) == 3
                and all(type(v) is int and v >= 0 for v in r["grid"] + r["group"])
                and all(_capture_arg_ok(a) for a in r["args"]))
    return True


def _read_capture(path):
    """The capture's records. A last line without its newline is a record the
    process was writing when it died: left out, with a note."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise _Refused(f"{path}: {e.strerror}") from None
    lines = text.split("\n")
    partial = lines.pop()  # "" when the file ends with its newline
    records, libraries = [], set()
    for n, line in enumerate(lines, 1):
        try:
            r = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than any record is
            r = None
        if n == 1 and not (isinstance(r, dict) and "bronze_capture" in r):
            raise _Refused(f"{path}: not a bronze capture file")
        if n > 1 and not (isinstance(r, dict) and _capture_record_ok(r, libraries)):
            raise _Refused(f"{path}:{n}: not a capture record")
        r["line"] = n
        records.append(r)
    if not records or records[0]["bronze_capture"] != 1:
        raise _Refused(f"{path}: not a bronze capture file" if not records else
                       f"{path}: capture format {records[0]['bronze_capture']!r}, this bronze reads 1")
    if partial:
        print(f"{path}: the last record is incomplete (the process stopped while writing it); left out",
              file=sys.stderr)
    return records[1:]


def _shown_arg(a):
    if "argument_buffer" in a:
        return "[" + ", ".join(_shown_arg(b) for b in a["argument_buffer"]) + "]"
    if "buffer" in a:
        return f"buffer#{a['buffer'] % 100000}[{a['bytes']}B {a['dtype']}]"
    return f"0x{a['bytes_hex']}"


def _show(args):
    records = _read_capture(args.file)
    libraries = {r["library"]: r["source"] for r in records if "source" in r}
    commands = [r for r in records if "source" not in r]
    print(f"{args.file}: {len(commands)} commands, {len(libraries)} shader libraries")
    for r in commands:
        if "kernel" in r:
            argv = ", ".join(_shown_arg(a) for a in r["args"])
            print(f"{r['seq']:>5}  kernel {r['kernel']:<20} lib {r['library']} grid {tuple(r['grid'])} "
                  f"group {tuple(r['group'])} stream {r['stream']} ({argv})")
        else:
            print(f"{r['seq']:>5}  {r['category']:<6} {r['op']:<20} {r['device']} stream {r['stream']}")
    return 0


def _replay(args):
    import bronze

    records = _read_capture(args.file)
    libraries, buffers = {}, {}

    def buffer(a):
        key = a["buffer"]
        if key not in buffers:  # same identity, same buffer: data flows as recorded
            dt = bronze.as_dtype(a["dtype"])
            if a["bytes"] % dt.itemsize:
                raise ValueError(f"{a['bytes']} bytes are no whole number of {dt}")
            buffers[key] = bronze.zeros(a["bytes"] // dt.itemsize, dtype=dt)
        return buffers[key]

    # What a doctored capture gets from bronze (a source that does not build,
    # an unknown dtype or kernel, a buffer past memory, arguments the kernel
    # refuses) is refused with its record's line; a kernel that faults, with
    # its name, at the end.
    refusals = (bronze.BronzeError, ValueError, TypeError)
    ran = 0
    for r in records:
        try:
            if "source" in r:
                libraries[r["library"]] = bronze.compile_shader(r["source"])
            if "kernel" not in r:
                continue
            call = []
            for a in r["args"]:
                if "argument_buffer" in a:
                    call.append([buffer(b) for b in a["argument_buffer"]])
                elif "buffer" in a:
                    call.append(buffer(a))
                else:
                    call.append(bytes.fromhex(a["bytes_hex"]))
            kernel = libraries[r["library"]]._kernel(r["kernel"])
            kernel(*call, threads=tuple(r["grid"]), group_size=tuple(r["group"]))
        except refusals as e:  # one line: a compile error's first, its place and words (no excerpt)
            first = (str(e).splitlines() or [repr(e)])[0]
            raise _Refused(f"{args.file}:{r['line']}: {first}") from None
        ran += 1
    try:
        bronze.synchronize()
    except bronze.DeviceError as e:
        raise _Refused(f"{args.file}: {e}") from None
    print(f"replayed {ran} kernel dispatches from {args.file} ({len(buffers)} buffers)")
    return 0


def _version():
    from . import __version__

    return __version__


def _jobs(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"a whole number >= 1, got {text!r}")
    return n


def _metallib_info(args):
    from . import _metallib
    import bronze

    if not os.path.isfile(args.file):
        raise _Refused(f"not a regular file: {args.file}" if os.path.exists(args.file) else f"no such file: {args.file}")
    with open(args.file, "rb") as f:
        data = f.read()
    try:
        info = _metallib.read_info(data, args.kernel)
    except (ValueError, bronze.NotSupportedError) as e:  # not a metallib, or no LLVM
        raise _Refused(e) from None
    missing = sorted(set(args.kernel) - {f["name"] for f in info["functions"]})
    if missing:
        raise _Refused(f"{args.file} has no function {', '.join(missing)}")
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump(info, f, indent=1)
        except OSError as e:
            raise _Refused(f"cannot write {args.json}: {e.strerror}") from None
    print("\n".join(_metallib.report(info, args.file, detail=bool(args.kernel))))
    return 1 if any("error" in f for f in info["functions"]) else 0


def main(argv=None):
    parser = _Parser(prog="bronze", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"bronze {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="devices, backends and limits").set_defaults(func=_info)
    comp = sub.add_parser("compile", help="compile Metal files ahead of time, each to a .bronzelib")
    comp.add_argument("files", nargs="+", metavar="FILE")
    comp.add_argument("-o", "--output", help="output path of a single FILE (default: FILE with .bronzelib)")
    comp.add_argument("--arch", action="append", default=[],
                      help="also embed a cubin for this GPU architecture (sm_90); repeatable; needs NVRTC")
    comp.add_argument("-I", dest="include", action="append", default=[], help="an include folder; repeatable")
    comp.add_argument("-D", dest="define", action="append", default=[], help="a macro, NAME or NAME=VALUE")
    comp.add_argument("--math-mode", choices=("safe", "relaxed", "fast"), default="fast",
                      help="Metal's math mode (default fast, as Metal's)")
    comp.set_defaults(func=_compile)
    chk = sub.add_parser("check", help="compile every .metal file under the paths (for CI); exit 1 if any fails")
    chk.add_argument("paths", nargs="+", metavar="PATH", help="a .metal file or a folder searched for them")
    chk.add_argument("-I", dest="include", action="append", default=[], help="an include folder; repeatable")
    chk.add_argument("-D", dest="define", action="append", default=[], help="a macro, NAME or NAME=VALUE")
    chk.add_argument("--device", default="cpu",
                     help="cpu (default), cuda[:N], or sm_XY: compile for that GPU architecture with NVRTC, no GPU needed")
    chk.add_argument("--jobs", type=_jobs, default=os.cpu_count() or 1, help="files compiled at once (default: the CPUs)")
    chk.add_argument("--build-all", action="store_true",
                     help="build every kernel (compile_shader checks a file and builds kernels on first use)")
    chk.add_argument("--json", help="write each file's result as JSON here")
    chk.add_argument("--junit", help="write a JUnit XML report here (one test case per file)")
    chk.set_defaults(func=_check)
    mi = sub.add_parser("metallib-info", help="what an Apple .metallib holds (read through LLVM)")
    mi.add_argument("file", metavar="FILE")
    mi.add_argument("--kernel", action="append", default=[], help="show this function in detail; repeatable")
    mi.add_argument("--json", help="write everything read as JSON here")
    mi.set_defaults(func=_metallib_info)
    cap = sub.add_parser("capture", help="inspect or replay a capture file").add_subparsers(dest="action", required=True)
    show = cap.add_parser("show", help="list the captured commands")
    show.add_argument("file")
    show.set_defaults(func=_show)
    replay = cap.add_parser("replay", help="run the captured kernels again")
    replay.add_argument("file")
    replay.set_defaults(func=_replay)
    try:
        args, extra = parser.parse_known_args(argv)
    except _Refused as e:  # _Parser's: the message names its command
        print(e, file=sys.stderr)
        return 2
    prog = " ".join(filter(None, ("bronze", args.command, getattr(args, "action", None))))
    try:
        if extra:  # said by the command they were given to, not by bronze's top level as parse_args would
            raise _Refused(f"unrecognized arguments: {' '.join(extra)} (see {prog} --help)")
        return args.func(args)
    except _Refused as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
