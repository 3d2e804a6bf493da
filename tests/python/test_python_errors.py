"""Errors reach Python as typed exceptions: one class per status code, all subclasses of
sluice.Error, carrying the C++ message (stage, shard, record, byte offset). Exceptions
raised by Python callables inside the pipeline come back as themselves, with the
pipeline's context as a note; error policies skip or raise them."""
import random

import numpy as np
import pytest

import sluice
from sluice_fixtures import ID_FEATURES, id_records, ids_dataset, ids_of, parse_id

CLASSES = {
    "InvalidArgument": (sluice.InvalidArgumentError, ValueError),
    "NotFound": (sluice.NotFoundError, LookupError),
    "AlreadyExists": (sluice.AlreadyExistsError, None),
    "DataLoss": (sluice.DataLossError, None),
    "OutOfRange": (sluice.OutOfRangeError, None),
    "IoError": (sluice.IoError, OSError),
    "ResourceExhausted": (sluice.ResourceExhaustedError, None),
    "FailedPrecondition": (sluice.FailedPreconditionError, None),
    "Cancelled": (sluice.CancelledError, None),
    "Unimplemented": (sluice.UnimplementedError, NotImplementedError),
    "Internal": (sluice.InternalError, None),
}


@pytest.mark.parametrize("code", sorted(CLASSES))
def test_every_status_code_has_its_class_and_keeps_the_message(code):
    cls, builtin = CLASSES[code]
    message = "shard 'data-00003.tfrecord' record 17: payload CRC mismatch at byte 4096"
    with pytest.raises(cls) as info:
        sluice._sluice._raise_status(code, message)
    assert str(info.value) == message
    assert isinstance(info.value, sluice.Error) and info.value.code == code
    assert builtin is None or isinstance(info.value, builtin)
    assert type(info.value).__module__ == "sluice"


def test_data_error_names_stage_shard_and_record():
    records = id_records([5, 5])
    records[1][3] = b"not a number"
    ds = sluice.from_records(records).map(parse_id, output=ID_FEATURES, name="parse_id")
    with pytest.raises(ValueError) as info:
        list(ds)
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert "map:parse_id: shard 'memory-shard-1' record 3 (epoch 0, position 8)" in note
    assert "invalid literal for int()" in str(info.value)
    assert info.traceback[-1].name == "parse_id"  # the original traceback survives


def test_corrupt_example_is_a_data_loss_error_with_the_offset():
    good = sluice.make_example({"label": 1})
    ds = sluice.from_records([good, good[:-1] + b"\xff\xff"]).parse_example({"label": "int64"})
    with pytest.raises(sluice.DataLossError, match=r"record 1 .*offset \d+"):
        list(ds)


def test_sluice_errors_raised_in_a_map_keep_their_class():
    def lose(e):
        raise sluice.DataLossError("my reader found a torn record")

    with pytest.raises(sluice.DataLossError, match="torn record"):
        next(ids_dataset().map(lose).iterator())


def test_skip_policy_drops_failing_records_and_counts_them():
    def odd_fails(e):
        if e["id"] % 2:
            raise ValueError("odd")
        return e

    ds = ids_dataset().map(odd_fails, on_error="skip", name="odd")
    it = ds.iterator()
    assert ids_of(it) == list(range(0, 100, 2))
    stage = next(s for s in it.stats()["stages"] if s["name"] == "map:odd")
    assert stage["skipped"] == 50
    # the policy can also come from the iterator options
    ds2 = ids_dataset().map(odd_fails)
    assert len(ids_of(ds2.iterator(on_error="skip"))) == 50


def test_quarantine_policy_writes_record_ids(tmp_path):
    def third_fails(e):
        if e["id"] % 3 == 0:
            raise ValueError("third")
        return e

    path = tmp_path / "quarantine.tsv"
    ds = ids_dataset((9,)).map(third_fails, on_error="quarantine")
    assert ids_of(ds.iterator(quarantine_path=str(path))) == [1, 2, 4, 5, 7, 8]
    lines = path.read_text().splitlines()
    assert [l.split("\t")[:2] for l in lines] == [["memory-shard-0", str(i)] for i in (0, 3, 6)]


def test_base_exceptions_are_never_skipped():
    def exits(e):
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        list(ids_dataset().map(exits, on_error="skip"))


def test_an_error_ends_the_stream_but_the_state_still_restores():
    records = id_records([10])
    records[0][6] = b"x"
    ds = sluice.from_records(records).map(parse_id, output=ID_FEATURES).batch(2)
    it = ds.iterator()
    good = [next(it), next(it), next(it)]
    state = it.state()
    with pytest.raises(ValueError):
        next(it)
    with pytest.raises(sluice.InvalidArgumentError, match="record 6 .*ValueError"):
        next(it)  # sticky: the same error again (as a sluice error naming the original)
    assert ids_of(good) == [0, 1, 2, 3, 4, 5]
    # Restored on the same data, the stream resumes at the failing record (its batch)...
    again = sluice.from_records(records).map(parse_id, output=ID_FEATURES).batch(2)
    with pytest.raises(ValueError):
        next(again.iterator(state=state))
    skipping = again.iterator(state=state, on_error="skip")
    assert ids_of(skipping) == [7, 8, 9]
    # ... while data changed since (the record fixed) is another snapshot: refused, not
    # silently read at the saved positions (docs/order.md, "Snapshot identity").
    fixed = sluice.from_records(id_records([10])).map(parse_id, output=ID_FEATURES).batch(2)
    with pytest.raises(sluice.FailedPreconditionError, match="another dataset snapshot"):
        fixed.iterator(state=state)


def test_python_errors_in_a_filter_name_the_filter():
    def broken(e):
        return e["no such feature"]

    with pytest.raises(KeyError) as info:
        list(ids_dataset().filter(broken, name="broken"))
    assert "filter:broken: shard 'memory-shard-0' record 0" in "".join(info.value.__notes__)


def test_bad_arguments_are_invalid_argument_errors_and_value_errors():
    with pytest.raises(ValueError):
        ids_dataset().batch(0)
    with pytest.raises(sluice.InvalidArgumentError, match="remainder"):
        sluice.from_records([b"x"]).shard(0, 1, remainder="keep")
    with pytest.raises(sluice.InvalidArgumentError, match="bad dimension 'x'"):
        ids_dataset().map(parse_id, output={"id": "int64[x]"})
    arr = np.zeros(3)
    with pytest.raises(TypeError, match="unsupported value"):
        sluice.make_example({"x": object()})
    assert arr.sum() == 0


# --- messages that quote data which is not UTF-8 (issue 35, item 11) --------------------

def damaged_bytes(seed, n=300):
    """Bytes that are neither JSON nor UTF-8 (random, led by two bytes no UTF-8 text holds)."""
    rng = random.Random(seed)
    return b"\xff\xfe" + bytes(rng.randrange(256) for _ in range(n))


def test_status_message_with_bytes_that_are_not_utf8_keeps_its_text():
    message = "shard 'x.tfrecord' at byte 12: last read: '\xff\xfe\x00z'".encode("latin-1")
    with pytest.raises(sluice.DataLossError) as info:
        sluice._sluice._raise_status("DataLoss", message)
    assert str(info.value) == "shard 'x.tfrecord' at byte 12: last read: '\\xff\\xfe\x00z'"


def test_random_bytes_in_dataset_json_give_a_message_naming_the_file(tmp_path):
    sluice.write_records(str(tmp_path / "data-0.tfrecord"), [b"a", b"b"], codec="none")
    for seed in range(5):
        (tmp_path / "dataset.json").write_bytes(damaged_bytes(seed))
        with pytest.raises(sluice.DataLossError) as info:
            list(sluice.read(str(tmp_path)))
        assert "dataset.json" in str(info.value) and "invalid JSON" in str(info.value), seed


def test_random_bytes_in_a_commit_file_give_a_message_naming_the_file(tmp_path):
    table = tmp_path / "t"
    sluice.write_table(str(table), [b"1", b"2"])
    sluice.write_table(str(table), [b"3"])
    commit = table / "_delta_log" / "00000000000000000001.json"
    for seed in range(5):
        commit.write_bytes(damaged_bytes(seed))
        for open_it in (lambda: sluice.Table(str(table)), lambda: list(sluice.read(str(table)))):
            with pytest.raises(sluice.DataLossError) as info:
                open_it()
            assert "00000000000000000001.json" in str(info.value), (seed, str(info.value))
            assert "\\x" in str(info.value)  # the quoted bytes, escaped
