"""The version of libstfix this package binds (include/stfix/base.h)."""
__version__ = "0.1.0"
