"""minitorch.nn.functional: PyTorch's path to the functional API (`import minitorch.nn.functional as F`). The names
are minitorch.functional's, the same objects (F.relu is minitorch.functional.relu): this module only re-exports."""
from ..functional import *  # noqa: F403 (the whole API, as listed in minitorch.functional.__all__)
from ..functional import __all__  # noqa: F401


def __dir__():  # dir(F) lists the API, as minitorch.functional's does
    return __all__
