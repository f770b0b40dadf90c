"""bronze's exception types.

They keep torch.mps's contracts: code that catches what torch.mps raises
(RuntimeError, SyntaxError for a shader compile error) keeps working.
"""


class BronzeError(RuntimeError):
    """Base of every error bronze raises that is not a TypeError/ValueError."""


class OutOfMemoryError(BronzeError):
    """An allocation did not fit under the memory limit or in device memory.

    Attributes give the figures at the time: requested, allocated, reserved
    and limit (bytes; limit 0 means no limit was set).
    """

    def __init__(self, message, requested=0, allocated=0, reserved=0, limit=0):
        super().__init__(message)
        self.requested = requested
        self.allocated = allocated
        self.reserved = reserved
        self.limit = limit


class DeviceError(BronzeError):
    """Queued device work failed; raised at the next synchronization."""


class NotSupportedError(BronzeError):
    """The feature is not available on this device or in this build."""


class ShaderCompileError(BronzeError, SyntaxError):
    """A shader did not compile; the message points into the user's source.

    lineno/offset: the line and column in the shader source (None when the
    compiler gave none).
    """

    def __init__(self, message, lineno=None, offset=None):
        SyntaxError.__init__(self, message)
        self.msg = message
        self.lineno = lineno
        self.offset = offset

    def __str__(self):
        return self.msg


class ShaderNotSupportedError(ShaderCompileError, NotSupportedError):
    """The shader includes a part of Metal bronze has no emulation of (Metal
    4's <metal_tensor> and <MetalPerformancePrimitives>); lineno is its
    #include's line."""


class KernelNotFoundError(BronzeError, AttributeError):
    """A library has no kernel of that name."""


class KernelArgumentError(BronzeError, TypeError):
    """A kernel call got an argument of the wrong kind: a number or list where
    the kernel takes a buffer, a tensor where it takes a value. A TypeError,
    and a RuntimeError as torch.mps raises there."""


class ProfilerError(BronzeError, ValueError):
    """Profiler misuse: started twice, stopped when not running, bad mode."""
