"""Minari's HDF5 layout encoded directly, for episodes of plain numeric arrays.

Creating HDF5 objects through the library costs tens of microseconds each (a group, three
attributes and five datasets per episode), more than playing a short CartPole episode. The
objects of this layout are few and fixed, so :func:`encode_file` writes their bytes itself,
as the HDF5 file format specification defines them, and the file is written in one call:

- superblock version 2 (read by HDF5 1.8 and later), addresses and lengths of 8 bytes
  (:data:`ADDRESS_WIDTH`), the root group's header at the end;
- object headers version 2 (``OHDR``, Jenkins lookup3 checksums as HDF5 computes them, no
  times); groups hold their links compactly (link info without a heap, group info);
- attributes ``id``, ``seed``, ``total_steps`` of each episode group and the root's storage
  version: scalar 64-bit little-endian integers (attribute messages version 3);
- each array's datatype is h5py's own (``H5Tencode`` of the type h5py maps its dtype to,
  so a ``bool`` array is h5py's enum and reads back as ``bool``); a datatype that at least
  :data:`MIN_SHARED_TYPE_USES` datasets and attributes use is committed once (an unnamed
  datatype object counting its users), which their messages refer to. An array of at least
  :data:`MIN_PACKED_BYTES` whose values are all one value (rewards of 1, no truncation) has
  no chunk at all: that value is its fill value, which HDF5 reads in place of a chunk never
  written (layout version 4, single-chunk index, HDF5 1.10). Else an array of at least
  :data:`MIN_COMPRESS_BYTES` (:data:`MIN_PACKED_BYTES` of one-byte items: flags compress
  about twentyfold) is one chunk through the shuffle and deflate filters when that is
  smaller than its bytes (deflated by libdeflate at :data:`DEFLATE_LEVEL`, smaller than
  zlib's best); else it is kept raw in its header (compact layout), or contiguous
  when larger than :data:`MAX_COMPACT_BYTES`. The shuffle filter's element is a whole row
  of floats where rows hold several (its parameter, which HDF5 reads back as written): each
  column's bytes come out together, byte by byte, and observations that change little from
  one step to the next deflate smaller than shuffled float by float (on the suite's cards
  up to 16% smaller files, QuadHover's expert data; CartPole's expert 6%, Ant's 7%);
- equal arrays (dtype, shape and values: the rewards, terminations and truncations of
  episodes of one length, mostly) are one dataset, hard-linked from every episode group that
  holds them, its header counting the links (HDF5 keeps that count when a group is deleted).

:func:`fits` says which episodes this encoder takes; the others (nested, text or large values,
very many episodes) go through the library (:mod:`~rlbench_suite.datasets.storage`).
The same episodes always give the same bytes (with the same libdeflate: the ``deflate``
package's version, which a build records).
"""

from __future__ import annotations

import collections
import ctypes
import functools
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SIGNATURE = b"\x89HDF\r\n\x1a\n"
MIN_PACKED_BYTES = 64
"""Arrays smaller than this are kept raw (a chunk's headers cost more than it saves)."""
MIN_COMPRESS_BYTES = 512
"""Arrays of wider items than a byte are compressed from this size on (below it, deflate
saves a few bytes an episode at more time than playing a short episode takes)."""
DEFLATE_LEVEL = 12
"""libdeflate's level of every compressed array, its smallest (near-optimal parsing). On the
suite's cards it writes 1.7% fewer bytes than zlib's level 4 (CartPole's 0.8%, Ant's 2 to 3%,
MiniGrid's up to a third) and takes about 10 times longer: some 35 s of CPU over the 42 cards'
arrays, against minutes of playing their episodes."""
FILTER_LEVEL = 9
"""The deflate level the filter message records: HDF5 accepts 0 to 9 there, and applies it when
it writes a chunk again (a reader ignores it)."""
MAX_COMPACT_BYTES = 16 << 10
"""Raw arrays up to this size live in their dataset's header (compact layout)."""
ADDRESS_WIDTH = 8
"""Bytes of an address or a length (the superblock's sizes). HDF5 2.0.0 reads files with
4-byte addresses, but its object copy (``h5py.Group.copy`` into another file, ``h5copy``)
writes unreadable objects from them and can corrupt the heap: 8, never 4 (4 made the suite's
files 0% to 11% smaller, the most where episodes are short)."""
MAX_ARRAY_BYTES = 4 << 20
"""Arrays larger than this (image episodes) go through the library writer (several chunks)."""
MIN_SHARED_TYPE_USES = 8
"""A datatype that this many datasets and attributes use is committed, once for all (their
messages then refer to it in 6 bytes instead of 12 to 38)."""
MAX_EPISODES = 4096
"""More episodes than this go through the library writer (its root group indexes links)."""
KINDS = "biuf"
"""numpy dtype kinds encoded here: bool, signed and unsigned integers, floats."""

_DATASPACE, _LINK_INFO, _DATATYPE, _FILL, _LINK, _LAYOUT, _GROUP_INFO = 1, 2, 3, 5, 6, 8, 10
_FILTERS, _ATTRIBUTE, _REFCOUNT = 11, 12, 22
_SHUFFLE, _DEFLATE, _OPTIONAL = 2, 1, 1
_ALLOC_EARLY, _ALLOC_LATE, _ALLOC_INCREMENTAL, _FILL_IF_SET, _FILL_DEFINED = 1, 2, 3, 2, 32


_MASK = 0xFFFFFFFF


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _MASK


def _lookup3_python(data: bytes, initval: int = 0) -> int:
    """Bob Jenkins' lookup3 ``hashlittle`` of ``data`` (HDF5's metadata checksum)."""
    a = b = c = (0xDEADBEEF + len(data) + initval) & _MASK
    if not data:
        return c
    padded = data + bytes(-len(data) % 12)
    words = struct.unpack(f"<{len(padded) // 4}I", padded)
    for i in range(0, len(words) - 3, 3):  # mix: x -= y; x ^= rot(y, k); y += z, rotating
        x, y, z = (a + words[i]) & _MASK, (c + words[i + 2]) & _MASK, (b + words[i + 1]) & _MASK
        for k in (4, 6, 8, 16, 19, 4):
            x = ((x - y) & _MASK) ^ _rot(y, k)
            y = (y + z) & _MASK
            x, y, z = z, x, y
        a, b, c = x, z, y
    a, b, c = ((v + w) & _MASK for v, w in zip((a, b, c), words[-3:], strict=True))
    x, y, z = c, b, a  # final: x ^= y; x -= rot(y, k), rotating
    for k in (14, 11, 25, 16, 4, 14, 24):
        x = ((x ^ y) - _rot(y, k)) & _MASK
        x, y, z = z, x, y
    return y


@functools.cache
def hdf5_library() -> Any:
    """The HDF5 library that h5py loaded (through ctypes, for the calls h5py does not wrap),
    found in the process's mapped files (Linux); None elsewhere."""
    import h5py  # noqa: F401 (loads the library)

    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        path = line.split()[-1]
        if re.search(r"/libhdf5(?!_hl)[^/]*\.so", path):
            library = ctypes.CDLL(path)  # the loaded copy: the same library h5py calls
            return library if hasattr(library, "H5Pset_dset_no_attrs_hint") else None
    return None


@functools.cache
def _checksum_function() -> Any:
    """HDF5's own ``H5_checksum_lookup3`` from the library h5py loaded, else the Python one."""
    library = hdf5_library()
    function = getattr(library, "H5_checksum_lookup3", None) if library is not None else None
    if function is None:
        return _lookup3_python
    function.argtypes = (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32)
    function.restype = ctypes.c_uint32
    return lambda data, initval=0: function(data, len(data), initval)


def checksum(data: bytes) -> int:
    """HDF5's metadata checksum of ``data``."""
    return int(_checksum_function()(data, 0))


def _message(kind: int, body: bytes, flags: int = 0) -> bytes:
    return struct.pack("<BHB", kind, len(body), flags) + body


def _object_header(messages: Sequence[bytes]) -> bytes:
    """An object header version 2 of one chunk holding ``messages``, with its checksum."""
    body = b"".join(messages)
    size = len(body)
    if size < 1 << 8:
        head = b"OHDR\x02\x00" + struct.pack("<B", size)
    elif size < 1 << 16:
        head = b"OHDR\x02\x01" + struct.pack("<H", size)
    else:
        head = b"OHDR\x02\x02" + struct.pack("<I", size)
    data = head + body
    return data + struct.pack("<I", checksum(data))


@functools.cache
def _datatype(dtype: np.dtype) -> bytes:
    """The datatype message h5py's type for ``dtype`` encodes to (``H5Tencode`` less its
    two-byte prefix)."""
    from h5py import h5t

    return h5t.py_create(dtype, logical=True).encode()[2:]


@functools.cache
def _pipeline(element: int) -> bytes:
    """The filter pipeline message (version 2): shuffle of ``element`` bytes (when wider than
    a byte), deflate (recording :data:`FILTER_LEVEL`)."""
    filters = [(_DEFLATE, FILTER_LEVEL)]
    if element > 1:
        filters.insert(0, (_SHUFFLE, element))
    return _message(_FILTERS, bytes([2, len(filters)]) + b"".join(
        struct.pack("<HHHI", ident, _OPTIONAL, 1, value) for ident, value in filters
    ), 1)  # fmt: skip


_INT64 = struct.Struct("<q")
ATTRIBUTE_DTYPE = np.dtype("<i8")
_FILL_COMPACT = _message(_FILL, bytes([3, _ALLOC_EARLY | _FILL_IF_SET << 2]), 1)
_FILL_CONTIGUOUS = _message(_FILL, bytes([3, _ALLOC_LATE | _FILL_IF_SET << 2]), 1)
_FILL_CHUNKED = _message(_FILL, bytes([3, _ALLOC_INCREMENTAL | _FILL_IF_SET << 2]), 1)


def _element(array: np.ndarray) -> int:
    """The shuffle filter's element: a whole row of floats where rows hold several (each
    column's bytes then come out together: states change little from one step to the next),
    else an item (integer grids deflate better shuffled item by item)."""
    if array.dtype.kind == "f" and array.ndim > 1 and len(array) > 0:
        return array[0].nbytes
    return array.dtype.itemsize


@functools.cache
def compressor() -> Any:
    """libdeflate's zlib-format compressor (the ``deflate`` package of the ``datasets`` extra),
    imported on first use: reading files does not need it."""
    import deflate

    return deflate.zlib_compress


def _deflate(raw: bytes, element: int) -> bytes:
    """``raw`` shuffled by ``element`` bytes, then deflated (zlib format, libdeflate at
    :data:`DEFLATE_LEVEL`)."""
    if element > 1:
        raw = np.frombuffer(raw, np.uint8).reshape(-1, element).T.tobytes()
    return compressor()(raw, DEFLATE_LEVEL)


def fits(episodes: Sequence[Any], keys: Sequence[str]) -> bool:
    """Whether :func:`encode_file` takes ``episodes``: at most :data:`MAX_EPISODES`, each
    value a numpy array of a :data:`KINDS` dtype in native little-endian order, with rows,
    of at most :data:`MAX_ARRAY_BYTES` (``keys``: the episode's values)."""
    if len(episodes) > MAX_EPISODES:
        return False
    for episode in episodes:
        for key in keys:
            value = getattr(episode, key)
            if (type(value) is not np.ndarray or value.dtype.kind not in KINDS
                    or value.dtype.byteorder == ">" or value.ndim == 0
                    or value.nbytes > MAX_ARRAY_BYTES):  # fmt: skip
                return False
    return True


class _Encoder:
    """The file's bytes in order (``put`` returns where a piece starts), with addresses and
    lengths of :data:`ADDRESS_WIDTH` bytes (the superblock's sizes of offsets and lengths)."""

    def __init__(self) -> None:
        self.width = ADDRESS_WIDTH
        self.size = "Q"  # struct code of an address or a length (8 bytes)
        self.address = struct.Struct(f"<{self.size}")
        self.undefined = self.address.pack((1 << 8 * self.width) - 1)
        self.pieces: list[bytes] = []
        self.end = 8 + 4 + 4 * self.width + 4  # after the superblock
        self.types: dict[np.dtype, bytes] = {}  # the committed datatypes (shared messages)

    def commit(self, dtype: np.dtype, uses: int) -> None:
        """Write ``dtype`` as a committed datatype (an object of its own, unnamed) that
        ``uses`` datasets and attributes refer to."""
        messages = [_message(_DATATYPE, _datatype(dtype), 1), *_refcount(uses)]
        self.types[dtype] = b"\x03\x02" + self.address.pack(self.put(_object_header(messages)))

    def datatype(self, dtype: np.dtype) -> bytes:
        """A dataset's datatype message: shared (a reference to the committed type) or whole."""
        shared = self.types.get(dtype)
        if shared is None:
            return _message(_DATATYPE, _datatype(dtype), 1)
        return _message(_DATATYPE, shared, 3)  # constant, shared

    @functools.cache  # noqa: B019 (encoders are few and short-lived)
    def _attribute_head(self, name: str) -> bytes:
        """An int64 scalar attribute message (version 3) named ``name``, less its value."""
        encoded, space = name.encode("ascii") + b"\x00", b"\x02\0\0\0"
        shared = self.types.get(ATTRIBUTE_DTYPE)
        kind = _datatype(ATTRIBUTE_DTYPE) if shared is None else shared
        head = struct.pack("<BBHHHB", 3, shared is not None, len(encoded), len(kind), len(space),
                           0)  # fmt: skip
        body = head + encoded + kind + space
        return struct.pack("<BHB", _ATTRIBUTE, len(body) + 8, 0) + body

    def attribute(self, name: str, value: int) -> bytes:
        """A scalar little-endian int64 attribute (message version 3)."""
        return self._attribute_head(name) + _INT64.pack(value)

    def put(self, data: bytes) -> int:
        address = self.end
        self.pieces.append(data)
        self.end += len(data)
        return address

    def superblock(self, root: int) -> bytes:
        """Superblock version 2: no base address, no extension, the end of file, the root."""
        head = SIGNATURE + bytes([2, self.width, self.width, 0])
        data = head + struct.pack(f"<4{self.size}", 0, 0, self.end, root)
        data = data[: len(head) + self.width] + self.undefined + data[len(head) + 2 * self.width :]
        return data + struct.pack("<I", checksum(data))

    @functools.cache  # noqa: B019 (encoders are few and short-lived)
    def _link_head(self, name: str) -> bytes:
        encoded = name.encode("ascii")
        return struct.pack("<BHBBBB", _LINK, 3 + len(encoded) + self.width, 0, 1, 0,
                           len(encoded)) + encoded  # fmt: skip

    def link(self, name: str, address: int) -> bytes:
        """A hard link message (one-byte name length, ASCII)."""
        return self._link_head(name) + self.address.pack(address)

    def group(self, links: list[bytes], attributes: list[bytes]) -> int:
        """A group's header: link info (compact links: no heap, no index), group info (its
        phase change values when it holds more links than HDF5's default of 8 before it
        indexes them), ``attributes`` and ``links``; its address."""
        info = _message(_LINK_INFO, b"\x00\x00" + self.undefined * 2)
        phase = b"\x00\x00" if len(links) <= 8 else b"\x00\x01" + struct.pack("<HH", len(links), 6)
        return self.put(_object_header([info, _message(_GROUP_INFO, phase), *attributes,
                                        *links]))  # fmt: skip

    def dataset(self, array: np.ndarray, links: int = 1) -> int:
        """Write ``array``'s data (when not compact) and header, with ``links`` hard links to
        it; the header's address."""
        array = np.ascontiguousarray(array)
        ndim = array.ndim
        space = struct.pack(f"<BHBBBBB{ndim}{self.size}", _DATASPACE, 4 + self.width * ndim, 0,
                            2, ndim, 0, 1, *array.shape)  # fmt: skip
        raw = array.tobytes()
        size = array.dtype.itemsize
        head = [space, self.datatype(array.dtype), *_refcount(links)]
        if len(raw) >= MIN_PACKED_BYTES and raw == raw[:size] * (len(raw) // size):
            fill = bytes([3, _ALLOC_INCREMENTAL | _FILL_IF_SET << 2 | _FILL_DEFINED])
            fill += struct.pack("<I", size) + raw[:size]
            layout = _message(_LAYOUT, self._one_chunk(array, 0))
            return self.put(_object_header([*head, _message(_FILL, fill, 1), layout]))
        packed = None
        element = _element(array)
        if len(raw) >= (MIN_COMPRESS_BYTES if size > 1 else MIN_PACKED_BYTES):
            packed = _deflate(raw, element)
            if len(packed) >= len(raw):
                packed = None
        if packed is not None:
            index = struct.pack(f"<{self.size}I{self.size}", len(packed), 0, self.put(packed))
            layout = _message(_LAYOUT, self._one_chunk(array, 2, index))
            messages = [*head, _FILL_CHUNKED, layout, _pipeline(element)]
        elif len(raw) <= MAX_COMPACT_BYTES:
            layout = struct.pack("<BHBBBH", _LAYOUT, 4 + len(raw), 0, 3, 0, len(raw)) + raw
            messages = [*head, _FILL_COMPACT, layout]
        else:
            layout = b"\x03\x01" + struct.pack(f"<2{self.size}", self.put(raw), len(raw))
            messages = [*head, _FILL_CONTIGUOUS, _message(_LAYOUT, layout)]
        return self.put(_object_header(messages))

    def _one_chunk(self, array: np.ndarray, flags: int, index: bytes = b"") -> bytes:
        """A layout message (version 4) of ``array`` as one chunk (single-chunk index) with
        ``flags`` and the ``index`` fields; no chunk (undefined address) without them."""
        dims = (*array.shape, array.dtype.itemsize)
        width = max(1, (max(dims).bit_length() + 7) // 8)
        return (struct.pack("<BBBBB", 4, 2, flags, len(dims), width)
                + b"".join(d.to_bytes(width, "little") for d in dims)
                + b"\x01" + (index or self.undefined))  # fmt: skip


def _refcount(links: int) -> list[bytes]:
    """The reference count message of an object with ``links`` links (none for one)."""
    return [_message(_REFCOUNT, b"\x00" + struct.pack("<I", links))] if links > 1 else []


def _fingerprint(array: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    """What makes two arrays one stored dataset: dtype, shape and bytes."""
    return array.dtype.str, array.shape, array.tobytes()


def encode_file(episodes: Sequence[Any], keys: Sequence[str],
                root_attributes: dict[str, int]) -> list[bytes]:
    """The bytes of an HDF5 file of ``episodes`` (which :func:`fits`) in Minari's layout, as
    pieces to write one after another: a group ``episode_<i>`` per episode holding its
    ``keys`` (in that order) and its ``id``, ``seed`` and ``total_steps``; the root group gets
    ``root_attributes``. Equal arrays (dtype, shape and values) are one dataset, hard-linked
    from each group that holds them. Addresses and lengths take 8 bytes, HDF5's default:
    :data:`ADDRESS_WIDTH`."""
    encoder = _Encoder()
    prints = [[_fingerprint(getattr(e, key)) for key in keys] for e in episodes]
    links = collections.Counter(p for row in prints for p in row)
    uses = collections.Counter(np.dtype(p[0]) for p in links)
    uses[ATTRIBUTE_DTYPE] += len(root_attributes) + sum(
        3 if e.seed is not None else 2 for e in episodes)
    for dtype, count in sorted(uses.items(), key=lambda item: item[0].str):
        if count >= MIN_SHARED_TYPE_USES:
            encoder.commit(dtype, count)
    written: dict[tuple[str, tuple[int, ...], bytes], int] = {}
    groups = []
    for index, (episode, row) in enumerate(zip(episodes, prints, strict=True)):
        members = []
        for key, print_ in zip(keys, row, strict=True):
            if print_ not in written:
                written[print_] = encoder.dataset(getattr(episode, key), links[print_])
            members.append(encoder.link(key, written[print_]))
        attributes = [encoder.attribute("id", index)]
        if episode.seed is not None:
            attributes.append(encoder.attribute("seed", int(episode.seed)))
        attributes.append(encoder.attribute("total_steps", len(episode)))
        groups.append(encoder.link(f"episode_{index}", encoder.group(members, attributes)))
    root = encoder.group(groups, [encoder.attribute(k, v) for k, v in root_attributes.items()])
    return [encoder.superblock(root), *encoder.pieces]
