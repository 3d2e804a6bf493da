"""sluice.text: SentencePiece tokenization in C++ threads, and reading token caches.

    sp = sluice.text.SentencePiece("spm.model")
    ids = sp.encode(["first document", "second"], threads=4)   # list of int32 arrays

The pipeline stages are Dataset methods: ds.tokenize("text", sp), ds.pack(seq_len, eos_id),
ds.padded_batch(...), ds.bucket_by_length(...); sluice.read_token_cache(prefix) reads a
token cache (docs/text-format.md) as a dataset of {"tokens": int32[n]} elements.
"""

from __future__ import annotations

import os
from typing import Iterable, List, Sequence, Tuple, Union

import numpy as np

from . import _sluice


class SentencePiece:
    """A SentencePiece model (.model file). Ids equal SentencePiece's own encode, including
    for empty text and invalid UTF-8 (bytes input; bad bytes become U+FFFD)."""

    __slots__ = ("_cpp", "path")

    def __init__(self, model: Union[str, os.PathLike], *, add_bos: bool = False,
                 add_eos: bool = False):
        self.path = str(model)
        self._cpp = _sluice._SentencePiece(self.path, add_bos, add_eos)

    def encode(self, texts: Union[str, bytes, Iterable[Union[str, bytes]]],
               threads: int = 0, ragged: bool = False
               ) -> Union[np.ndarray, List[np.ndarray], Tuple[np.ndarray, np.ndarray]]:
        """Ids of each text as an int32 array, encoded by `threads` C++ threads without the
        GIL (0: one per core). A single str/bytes gives one array.

        ragged=True returns `(values, offsets)` instead of a list: all ids in one int32
        array and int64 offsets with one entry more than texts, text i's ids being
        `values[offsets[i]:offsets[i+1]]` (the layout of byte-string batches). It skips
        building one array object per text, which is most of the cost for short lines."""
        if isinstance(texts, (str, bytes)):
            if ragged:
                return self._cpp.encode_ragged([texts], threads)
            return self._cpp.encode([texts], threads)[0]
        if ragged:
            return self._cpp.encode_ragged(texts, threads)
        return self._cpp.encode(texts, threads)

    def decode(self, ids: Sequence[int]) -> str:
        return self._cpp.decode([int(i) for i in ids])

    @property
    def vocab_size(self) -> int:
        return self._cpp.vocab_size

    @property
    def bos_id(self) -> int:
        return self._cpp.bos_id

    @property
    def eos_id(self) -> int:
        return self._cpp.eos_id

    @property
    def pad_id(self) -> int:
        return self._cpp.pad_id

    @property
    def unk_id(self) -> int:
        return self._cpp.unk_id

    def __repr__(self) -> str:
        return f"sluice.text.SentencePiece({self.path!r}, vocab_size={self.vocab_size})"


def as_model(model: Union[str, os.PathLike, SentencePiece]) -> SentencePiece:
    return model if isinstance(model, SentencePiece) else SentencePiece(model)
