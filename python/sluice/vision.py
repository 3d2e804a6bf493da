"""Image augmentations for `Dataset.decode_image`, with torchvision's semantics (torchvision
0.14 on PIL images; docs/vision.md lists each op and every deviation).

    ds.decode_image("image/encoded",
                    sluice.vision.RandomResizedCrop(224),
                    sluice.vision.RandomHorizontalFlip(),
                    sluice.vision.Normalize(mean=(0.485, 0.456, 0.406),
                                            std=(0.229, 0.224, 0.225)),
                    layout="NCHW", dtype="float32", output="image")

The ops only describe; decoding and augmenting run in C++ on the pipeline's threads. Random
draws come from the sample's generator, seeded by (shuffle seed, epoch, global position):
a resumed iterator reproduces the same crops and flips.
"""
from typing import Sequence, Tuple, Union

Size = Union[int, Sequence[int]]


def _hw(size: Size, what: str) -> Tuple[int, int]:
    """torchvision's size argument: an int is a square, a pair is (height, width)."""
    if isinstance(size, int):
        return size, size
    size = tuple(int(s) for s in size)
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(f"{what}: size must be an int or (height, width), got {size}")
    return size


class Op:
    """Base class: `spec()` is the tuple the C++ stage parses."""
    __slots__ = ()

    def spec(self) -> tuple:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.spec() == other.spec()


class RandomResizedCrop(Op):
    """A random box (area fraction in `scale`, aspect ratio in `ratio`; 10 attempts, then a
    centre crop) resized to `size` with antialiased bilinear filtering, as torchvision."""
    __slots__ = ("size", "scale", "ratio")

    def __init__(self, size: Size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
        self.size = _hw(size, "RandomResizedCrop")
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))

    def spec(self) -> tuple:
        return ("RandomResizedCrop", *self.size, *self.scale, *self.ratio)


class Resize(Op):
    """An int scales the shorter side to `size` (keeping the aspect ratio); (height, width)
    resizes to exactly that. Bilinear with antialiasing, as torchvision on PIL images."""
    __slots__ = ("size",)

    def __init__(self, size: Size):
        self.size = size if isinstance(size, int) else _hw(size, "Resize")

    def spec(self) -> tuple:
        if isinstance(self.size, int):
            return ("Resize", self.size, 0, 0)
        return ("Resize", 0, *self.size)


class CenterCrop(Op):
    """The centred window of `size`; smaller images are zero-padded, as torchvision."""
    __slots__ = ("size",)

    def __init__(self, size: Size):
        self.size = _hw(size, "CenterCrop")

    def spec(self) -> tuple:
        return ("CenterCrop", *self.size)


class RandomHorizontalFlip(Op):
    """Mirrors the image with probability p."""
    __slots__ = ("p",)

    def __init__(self, p: float = 0.5):
        self.p = float(p)

    def spec(self) -> tuple:
        return ("RandomHorizontalFlip", self.p)


class Normalize(Op):
    """(pixel / 255 - mean) / std per channel (ToTensor then Normalize); needs a float dtype."""
    __slots__ = ("mean", "std")

    def __init__(self, mean: Sequence[float], std: Sequence[float]):
        self.mean = tuple(float(m) for m in mean)
        self.std = tuple(float(s) for s in std)

    def spec(self) -> tuple:
        return ("Normalize", self.mean, self.std)


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

__all__ = ["CenterCrop", "IMAGENET_MEAN", "IMAGENET_STD", "Normalize", "Op",
           "RandomHorizontalFlip", "RandomResizedCrop", "Resize"]
