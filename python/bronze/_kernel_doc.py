"""A kernel's own __doc__ (help(lib.k)): its parameters as the compiler
reflects them (Kernel.params) and how a call binds its arguments.

The class keeps its docstring (help(bronze.Kernel)); each instance gets one
made from its reflection. The reflection is the build's (the compiler lays
out the parameters' types, and a lazily built kernel's reflection is read
only once it is built), so reading the doc of a kernel not built yet builds
it, as reading Kernel.params does; a kernel that does not build gets a doc
saying why.
"""

from .errors import BronzeError

_CONTRACT = """\
Call: {name}(*args, threads=None, group_size=None, threadgroup_memory=None, stream=None,
       arg_casts=None, error_buf_idx=None)
  The call queues the kernel and returns at once (reading a bronze tensor waits for it).
  args: one per buffer and value parameter, in the order of their [[buffer(n)]] slots
    (the order above): a buffer takes a bronze tensor or an array (NumPy, PyTorch, CuPy,
    zero-copy; a read-only buffer also a list of numbers); a value takes a number, a 0-d
    tensor, a list of numbers (vectors, arrays) or bytes (structs). A wrong count raises
    TypeError, a wrong kind KernelArgumentError, before anything runs.
  threads: the grid in threads, an int or 1 to 3 ints (Metal's dispatchThreads); default:
    the first tensor argument's number of elements.
  group_size: threads per threadgroup, an int or 1 to 3 ints; default: chosen from the
    kernel's limits (max_threads_per_threadgroup).
  threadgroup_memory: bytes of the [[threadgroup(0)]] buffer (an int) or of each index
    (a list), as setThreadgroupMemoryLength:atIndex:.
  stream: a bronze.Stream to queue on; default: the current stream of the device.
  arg_casts: torch.mps's, a cast name ("fp16", "bf16", "int32", "int16", "int8", "uint8")
    for every value argument, or a dict of argument index to cast name.
  error_buf_idx: torch.mps's, the [[buffer(n)]] slot of a c10::metal::ErrorMessages*
    parameter: the stream's error buffer binds there (args take the other slots), and a
    kernel's TORCH_REPORT_ERROR is raised as DeviceError at the next synchronize.
  A kernel that faults raises DeviceError at the next synchronize; compile_shader(...,
  validate=True) bounds-checks every buffer access."""


def _slot(p):
    if p["kind"] == "attribute":
        return f"[[{p['attribute']}]]"
    return f"[[{'threadgroup' if p['kind'] == 'threadgroup' else 'buffer'}({p['index']})]]"


def _describe(p):
    kind = p["kind"]
    if kind == "buffer":
        return f"buffer, {p['type']}* ({'read' if p['access'] == 'read' else 'read and written'})"
    if kind == "scalar":
        return f"value, {p['type']} ({p['size']} bytes)"
    if kind == "threadgroup":
        return f"threadgroup buffer, {p['type']}* (sized by threadgroup_memory=)"
    return f"thread-position attribute, {p['type']} (set for each thread)"


def kernel_doc(kernel):
    """The doc of one kernel: its signature, its parameters and the call contract."""
    name = kernel.name
    try:
        params = kernel.params
    except BronzeError as e:
        return f"Kernel '{name}', which does not build:\n{e}\n\n" + _CONTRACT.format(name=name)
    bound = sorted((p for p in params if p["binding"] >= 0), key=lambda p: p["binding"])
    others = [p for p in params if p["binding"] < 0]
    width = max([len(p["name"]) for p in params] + [4])
    slots = max([len(_slot(p)) for p in params] + [4])

    def line(p, position):
        return f"  {position:>3}  {p['name']:<{width}}  {_slot(p):<{slots}}  {_describe(p)}"

    text = [f"Kernel '{name}': {name}({', '.join(p['name'] for p in bound)})", ""]
    text.append("Arguments, in call order:" if bound else "Arguments: none.")
    text += [line(p, p["binding"]) for p in bound]
    if others:
        text += ["", "Parameters that take no argument:"]
        text += [line(p, "-") for p in others]
    return "\n".join(text) + "\n\n" + _CONTRACT.format(name=name)


class KernelDoc:
    """Kernel.__doc__: the class's docstring on the class, kernel_doc() on a kernel."""

    def __init__(self, class_doc):
        self.class_doc = class_doc

    def __get__(self, kernel, owner=None):
        return self.class_doc if kernel is None else kernel_doc(kernel)
