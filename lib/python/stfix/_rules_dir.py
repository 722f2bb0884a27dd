"""Where the bundled recipes are: the copy made with the package, else the source
tree's rules/ directory (a development checkout)."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def rules_dir() -> str:
    """The directory of the bundled recipes (NAME.yaml, and tp/NAME.yaml profiles)."""
    mine = os.path.join(_HERE, "rules")
    if os.path.isdir(mine):
        return mine
    return os.path.normpath(os.path.join(_HERE, "..", "..", "..", "rules"))
