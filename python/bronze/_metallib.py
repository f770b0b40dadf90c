"""Apple .metallib files: what `bronze metallib-info` reports (the reading
itself is C++: src/air, through LLVM)."""

from __future__ import annotations

import collections
import hashlib
import struct
from typing import Any

from . import _C


def read_info(data: bytes, names: list[str] | None = None) -> dict[str, Any]:
    """The library's header and, per function (all, or those named), its
    reflection, function constants and air.* intrinsics with call counts."""
    return _C._metallib_info(bytes(data), list(names or []))


def _attribute(p: dict[str, Any]) -> str:
    if p["kind"] in ("buffer", "scalar"):
        return f"[[buffer({p['index']})]]"
    if p["kind"] == "threadgroup":
        return f"[[threadgroup({p['index']})]]"
    if p["kind"] == "attribute":
        return f"[[{p['attribute']}]]"
    return ""


def signature(f: dict[str, Any]) -> str:
    """The kernel as Metal would declare it, from its reflection."""
    parts = []
    for p in f["params"]:
        if p["kind"] in ("buffer", "scalar"):  # a scalar: constant T&
            space = "constant" if p.get("address_space") == 2 else "device"
            const = "const " if p["read_only"] and space == "device" else ""
            decl = f"{space} {const}{p['type']}{'&' if p['by_value'] else '*'} {p['name']}"
        elif p["kind"] == "threadgroup":
            decl = f"threadgroup {p['type']}* {p['name']}"
        else:
            decl = f"{p['type']} {p['name']}"
        guard = f" (if {p['function_constant']})" if p.get("function_constant") else ""
        parts.append(f"{decl} {_attribute(p)}{guard}".rstrip())
    return f"{f['type']} void {f['name']}(" + ", ".join(parts) + ")"


def report(info: dict[str, Any], path: str, detail: bool) -> list[str]:
    """The lines `bronze metallib-info` prints."""
    fns = info["functions"]
    kinds = collections.Counter(f["type"] for f in fns)
    versions = collections.Counter((f["air_version"], f["metal_version"]) for f in fns)
    air, metal = versions.most_common(1)[0][0] if versions else ("-", "-")
    counts = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in kinds.most_common())
    lines = [f"{path}: Metal library {info['version']} for {info['platform']}, {len(fns)} functions "
             f"({counts}), AIR {air}, Metal {metal}; "
             f"read with {info['llvm']}"]
    errors = [f for f in fns if "error" in f]
    for f in errors:
        lines.append(f"  {f['name']}: {f['error']}")
    unsupported = collections.Counter(f["unsupported"] for f in fns if f.get("unsupported"))
    for why, n in unsupported.most_common():
        lines.append(f"  {n} not bound by bronze: {why}")
    if detail:
        for f in fns:
            if "error" in f:
                continue
            lines.append("")
            lines.append(signature(f))
            for backend in ("cpu", "cuda"):
                lines.append(f"  {backend.upper()}: {'has all it needs' if f[backend] is True else 'cannot run: ' + f[backend]}")
            lines.append(f"  hash {f['hash']}, {f['bitcode_bytes']} bytes of bitcode, "
                         f"{'cooperative (barriers or simdgroup functions)' if f['cooperative'] else 'plain'}, "
                         f"{f['threadgroup_bytes']} bytes of threadgroup variables")
            for c in f["function_constants"]:
                lines.append(f"  constant {c['type']} {c['name']} [[function_constant({c['index']})]]")
            for name, calls in sorted(f["intrinsics"].items()):
                lines.append(f"  calls {name} ({calls}x)")
        return lines
    for backend in ("cpu", "cuda"):
        read = [f for f in fns if "error" not in f]
        ok = sum(1 for f in read if f[backend] is True)
        lines.append(f"{backend.upper()}: {ok} of {len(read)} kernels have all they need to run")
        missing = collections.Counter(f[backend].split(":")[0] for f in read if f[backend] is not True)
        lines.extend(f"  {n:7d}  {why}" for why, n in missing.most_common(12))
        if len(missing) > 12:
            lines.append(f"  ... and {len(missing) - 12} more reasons (--json lists each kernel's)")
    uses = collections.Counter(name for f in fns for name in f.get("intrinsics", {}))
    lines.append(f"{len(uses)} air.* intrinsics, by the number of functions calling each:")
    lines.extend(f"  {n:7d}  {name}" for name, n in sorted(uses.items(), key=lambda kv: (-kv[1], kv[0])))
    return lines


def _tag(name: bytes, data: bytes) -> bytes:
    return name + struct.pack("<H", len(data)) + data


def pack(functions: list[tuple[str, bytes]], kind: int = 2) -> bytes:
    """A .metallib of (name, bitcode) functions of one type (2: kernels), laid
    out as Apple's tools lay it out: for tests and subset()."""
    entries, modules = [], b""
    for name, bitcode in functions:
        # LLVM wraps bitcode for Apple triples itself; Apple's files have the wrapper.
        wrapped = bitcode if bitcode[:4] == b"\xde\xc0\x17\x0b" else (
            struct.pack("<5I", 0x0B17C0DE, 0, 20, len(bitcode), 0xFFFFFFFF) + bitcode)
        fields = (_tag(b"NAME", name.encode() + b"\0") + _tag(b"TYPE", bytes([kind])) +
                  _tag(b"HASH", hashlib.sha256(wrapped).digest()) +  # as Apple's: of the wrapped module
                  _tag(b"OFFT", struct.pack("<3Q", 0, 0, len(modules))) +
                  _tag(b"VERS", struct.pack("<4H", 2, 6, 3, 1)) + _tag(b"MDSZ", struct.pack("<Q", len(wrapped))) +
                  b"ENDT")
        entries.append(struct.pack("<I", 4 + len(fields)) + fields)
        modules += wrapped
    listing = b"".join(entries)
    header = 88
    list_off, list_size = header, len(listing)
    meta_off = list_off + 4 + list_size
    meta = b"\x08\0\0\0ENDT" * len(functions)
    bc_off = meta_off + 2 * len(meta)
    size = bc_off + len(modules)
    head = (b"MTLB" + struct.pack("<HHHBBHH", 0x8001, 2, 7, 0, 0x81, 14, 0) + struct.pack("<Q", size) +
            struct.pack("<8Q", list_off, list_size, meta_off, len(meta), meta_off + len(meta), len(meta),
                        bc_off, len(modules)))
    assert len(head) == header
    return head + struct.pack("<I", len(functions)) + listing + meta + meta + modules


def subset(data: bytes, names: list[str]) -> bytes:
    """A .metallib holding only the named kernels of `data` (a few of MLX's
    17,248 carried where the whole file is too large to go)."""
    found = _C._metallib_bitcode(bytes(data), list(names))
    missing = set(names) - {name for name, _, _ in found}
    if missing:
        raise ValueError(f"no function named {', '.join(sorted(missing))} in the .metallib")
    return pack([(name, bitcode) for name, _, bitcode in found])
