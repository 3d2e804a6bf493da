"""Iterator state from Python: it.state() is small bytes, and ds.iterator(state=...) (or
it.restore) continues with exactly the elements the uninterrupted iterator would have
produced, at every breakpoint, in every shuffle mode, across epochs and world sizes."""
import pytest

import sluice
from sluice_fixtures import ID_FEATURES, id_records, ids_of, parse_id

SHARDS = [17, 0, 23, 19]  # 59 records: no batch size below divides it


def pipeline(mode, prefetch=2):
    return (sluice.from_records(id_records(SHARDS), chunk_bytes=6)  # ~3 records per chunk
            .shuffle(seed=11, mode=mode, block_shards=2, buffer_size=7, window_chunks=4, lanes=2)
            .map(parse_id, output=ID_FEATURES, parallelism=2)
            .repeat(2)
            .batch(4)
            .prefetch(prefetch))


@pytest.mark.parametrize("mode", ["none", "global", "block", "buffer", "chunks"])
def test_restore_at_every_breakpoint_equals_the_uninterrupted_stream(mode):
    ds = pipeline(mode)
    full = [ids_of([b]) for b in ds]
    assert len(full) == 30  # 118 ids in batches of 4
    for cut in (0, 1, 14, 15, 29, 30):  # start, early, epoch boundary, last, end
        it = ds.iterator()
        for _ in range(cut):
            next(it)
        state = it.state()
        rest = [ids_of([b]) for b in ds.iterator(state=state)]
        assert rest == full[cut:], f"cut at batch {cut}"


def test_state_is_small_and_stable():
    it = pipeline("global").iterator()
    next(it)
    state = it.state()
    assert isinstance(state, bytes) and len(state) < 4096
    assert it.state() == state  # saving does not move the iterator
    rest_a = ids_of(it)
    rest_b = ids_of(pipeline("global").iterator(state=state))
    assert rest_a == rest_b


def test_state_carries_its_epoch():
    ds = sluice.from_records(id_records(SHARDS)).shuffle(seed=3).map(
        parse_id, output=ID_FEATURES).batch(5)
    it = ds.iterator(epoch=4)
    head = ids_of([next(it), next(it)])
    state = it.state()
    tail = ids_of(it)
    assert ids_of(ds.iterator(state=state)) == tail  # no epoch given: the state's
    assert ids_of(ds.iterator(epoch=0, state=state)) == tail
    assert sorted(head + tail) == list(range(59))


def test_restore_method_rewinds_a_used_iterator():
    ds = pipeline("block")
    it = ds.iterator()
    next(it)
    state = it.state()
    after = ids_of([next(it), next(it)])
    it.restore(state)
    assert ids_of([next(it), next(it)]) == after


def test_elastic_restore_onto_another_world_size_misses_and_repeats_nothing():
    base = sluice.from_records(id_records([100, 100])).shuffle(seed=5)
    ds = lambda rank, world: base.shard(rank, world).map(parse_id, output=ID_FEATURES)  # noqa
    # 2 ranks consume 31 samples each, then the job continues on 3 ranks (138 left: no
    # remainder to drop).
    seen, states = [], []
    for r in range(2):
        it = ds(r, 2).iterator()
        seen += ids_of([next(it) for _ in range(31)])
        states.append(it.state())
    for r in range(3):
        seen += ids_of(ds(r, 3).iterator(state=states[0]))
    assert sorted(seen) == list(range(200))


def test_bad_states_are_refused_with_a_reason():
    ds = pipeline("global")
    state = ds.iterator().state()
    with pytest.raises(sluice.InvalidArgumentError):
        ds.iterator(state=b"not a state")
    with pytest.raises(sluice.InvalidArgumentError):
        ds.iterator(state=state[:-1] + bytes([state[-1] ^ 1]))
    other = sluice.from_records(id_records(SHARDS)).map(parse_id, output=ID_FEATURES).take(3)
    with pytest.raises(sluice.FailedPreconditionError, match="different stages"):
        other.iterator(state=state)
    reseeded = (sluice.from_records(id_records(SHARDS)).shuffle(seed=12, mode="global")
                .map(parse_id, output=ID_FEATURES).repeat(2).batch(4).prefetch(2))
    with pytest.raises(sluice.FailedPreconditionError, match="seed 11"):
        reseeded.iterator(state=state)
