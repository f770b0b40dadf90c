"""bronze's log as records of the ``bronze`` logger.

``BRONZE_LOG=info`` records each compile (what, the compiler's command line
or NVRTC's options, how long, the compile cache's answer) and each fallback
bronze takes; ``BRONZE_LOG=debug`` adds each launch and cache lookup. The
C++ core queues the records; they reach ``logging`` on the thread that made
the compile or launch, or on the main thread.

Set, the variable asks for the records to be seen: at the first one, a
``bronze`` logger left at NOTSET takes its level, and where no handler
would show them (``logging`` not configured) one writing to stderr is added.
A level or handler the application set is kept.
"""

import atexit
import logging

from . import _C

_logger = logging.getLogger("bronze")
_configured = False


def _emit(records):
    """Called by the core with [(levelno, message, created), ...]."""
    global _configured
    if not _configured:
        _configured = True
        if _logger.level == logging.NOTSET:
            _logger.setLevel(logging.DEBUG if _C._log_level() == "debug" else logging.INFO)
        if not _logger.hasHandlers():
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
            _logger.addHandler(handler)
    for level, message, created in records:
        if _logger.isEnabledFor(level):
            record = _logger.makeRecord(_logger.name, level, "(bronze)", 0, message, None, None)
            record.created, record.msecs = created, (created - int(created)) * 1000  # when it was made
            _logger.handle(record)


def _at_exit():
    """The records still queued; later ones (threads that outlive the interpreter) go to stderr."""
    _C._log_deliver()
    _C._log_install(None)


_C._log_install(_emit)
atexit.register(_at_exit)
