"""Names the lib folders of pip's NVIDIA wheels to the C++ core at import.

PyTorch (and nvidia-cuda-nvrtc-cu12 and the like) install NVRTC and cuBLAS
under site-packages/nvidia/<package>/lib, off the library path. bronze
searches those folders after the library path and before $CUDA_HOME and
/usr/local/cuda ($BRONZE_NVRTC_LIBRARY / $BRONZE_CUBLAS_LIBRARY still
choose one outright).
"""

import glob
import os
import sys

from . import _C


def pip_cuda_dirs() -> list[str]:
    """The nvidia/*/lib folders under sys.path's entries, in path order."""
    found: list[str] = []
    for root in sys.path:
        for d in sorted(glob.glob(os.path.join(root or ".", "nvidia", "*", "lib"))):
            d = os.path.abspath(d)
            if d not in found and os.path.isdir(d):
                found.append(d)
    return found


_C._set_pip_cuda_dirs(pip_cuda_dirs())
