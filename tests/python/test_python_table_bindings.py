"""The bindings sluice.dask (docs/dist.md, "From Dask") builds on, without Dask: cheap, so they
also run under ASan (`make asan-python`). _DataFile pickling (a worker's shards travel to the
client for the commit), _TableWriter's prefix, _Table.txn_version, make_example's schema
report, and the record schema checker."""
import pickle

import pytest

import sluice
from sluice import _sluice


def written(root, records, prefix="part"):
    w = _sluice._TableWriter(str(root), None, "zstd", 1 << 20, prefix)
    for r in records:
        w.write(r)
    return w.finish()


def test_data_files_pickled_by_a_worker_commit_on_the_client(tmp_path):
    root = tmp_path / "t"
    files = written(root, [b"a", b"b", b"c"], prefix="part-job1-00003")
    (f,) = pickle.loads(pickle.dumps(files))
    assert f.path.startswith("part-job1-00003-") and f.path.endswith("-00000.tfrecord.zst")
    assert f.records == 3 and f.size > 0 and f.partition_values == {}
    result = _sluice._commit_files(str(root), [f], "append", None, [], {}, ("job", 4))
    t = sluice.Table(root)
    assert result["version"] == 0 and t.files() == [f.path] and t.num_records() == 3
    assert t._t.txn_version("job") == 4 and t._t.txn_version("other") is None
    assert sorted(e["record"] for e in t.read()) == [b"a", b"b", b"c"]
    assert t.file_details()[0]["tags"] == {"sluice.index": f.path + ".idx"}


@pytest.mark.parametrize("path, message", [
    ("../outside.tfrecord.zst", r"has an empty, \. or \.\. part"),
    ("/etc/passwd", "is absolute"),
    ("s3://bucket/x.tfrecord.zst", "is an absolute URI"),
])
def test_crafted_data_file_leaving_the_root_is_refused_at_commit(tmp_path, path, message):
    (f,) = written(tmp_path / "t", [b"a"])
    state = list(f.__getstate__())
    state[0] = path
    forged = type(f).__new__(type(f))
    forged.__setstate__(tuple(state))
    with pytest.raises(sluice.InvalidArgumentError, match=message):
        _sluice._commit_files(str(tmp_path / "t"), [forged], "append", None, [], {}, None)
    assert not (tmp_path / "t" / "_delta_log").exists()  # nothing was committed


def test_data_file_state_of_another_shape_is_refused(tmp_path):
    (f,) = written(tmp_path / "t", [b"a"])
    with pytest.raises(sluice.InvalidArgumentError, match="a tuple of 6"):
        type(f).__new__(type(f)).__setstate__(("path", 1))


def test_table_writer_prefix_that_could_leave_its_directory_is_refused(tmp_path):
    for prefix in ("a/b", "_hidden", ".dot", ""):
        with pytest.raises(sluice.InvalidArgumentError, match="prefix"):
            _sluice._TableWriter(str(tmp_path / "t"), None, "zstd", 1 << 20, prefix)


def test_feature_specs_are_what_make_example_encoded():
    import numpy as np
    from sluice.features import check_schema, merge_schema

    def spec(value):
        data, types, counts = sluice._sluice._make_example_and_schema({"f": value})
        assert data == sluice.make_example({"f": value})
        return types["f"], counts["f"]
    assert spec("text") == ("bytes", 1) and spec(b"x") == ("bytes", 1)
    assert spec(True) == ("int64", 1) and spec(np.int32(3)) == ("int64", 1)
    assert spec(0.5) == ("float", 1)
    assert spec([1, 2.5]) == ("float", 2)  # one float list
    assert spec(np.zeros((2, 3), np.uint8)) == ("int64", 6)
    assert spec(["a", b"b"]) == ("bytes", 2)
    assert spec([]) == (None, 0) and spec(np.array([], "i8")) == ("int64", 0)
    for bad in (None, {"a": 1}, [[1], [2, 3]], 1j):
        with pytest.raises(TypeError, match="make_example: feature 'f' has"):
            spec(bad)
    a, b = {"x": ("int64", 1), "y": (None, 0)}, {"x": ("int64", 3), "y": ("bytes", 1)}
    assert check_schema(a, b, counts=False) is None
    assert check_schema(a, b, counts=True) == ("x", ("int64", 3), ("int64", 1))
    assert merge_schema(a, b) == {"x": ("int64", -1), "y": ("bytes", -1)}
    assert check_schema(a, {"x": ("float", 1), "y": (None, 0)}, counts=False)[0] == "x"
    assert check_schema(a, {"x": ("int64", 1)}, counts=False) == ("y", None, (None, 0))


def test_record_checker_merges_counts_and_refuses_other_types_and_fixed_counts():
    from sluice.features import RecordChecker

    def checked(declared, records):
        checker = RecordChecker(declared)
        for number, r in enumerate(records):
            _, types, counts = sluice._sluice._make_example_and_schema(r)
            checker.check(number, types, counts)
        return checker.schema()
    assert checked(None, []) is None
    varying = [{"t": []}, {"t": [1, 2]}, {"t": [3, 4]}, {"t": []}]
    assert checked(None, varying) == {"t": ("int64", -1)}
    assert checked(None, [{"t": []}, {"t": []}]) == {"t": (None, 0)}
    assert checked({"t": ("int64", 2)}, [{"t": [1, 2]}] * 3) == {"t": ("int64", 2)}
    with pytest.raises(sluice.InvalidArgumentError, match=r"record 2: feature 't' is int64 "
                       r"\(3 values per record\) here, int64 \(2 values per record\) in the "
                       r"table's features"):
        checked({"t": ("int64", 2)}, [{"t": [1, 2]}, {"t": [1, 2]}, {"t": [1, 2, 3]}])
    with pytest.raises(sluice.InvalidArgumentError, match=r"record 2: feature 't' is float "
                       r"\(1 value per record\) here, int64 \(a varying number of values\) in "
                       r"earlier records"):
        checked(None, [{"t": []}, {"t": [1, 2]}, {"t": 0.5}])
    with pytest.raises(sluice.InvalidArgumentError, match=r"record 1: feature 'u' is int64 "
                       r"\(1 value per record\) here, absent in earlier records"):
        checked(None, [{"t": 1}, {"t": 1, "u": 2}])
