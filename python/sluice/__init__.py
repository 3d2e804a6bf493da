from ._sluice import *  # placeholder
