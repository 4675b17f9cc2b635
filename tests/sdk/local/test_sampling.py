"""The llama.cpp runtime's sampler over numpy logits: greedy, temperature, top-p, one draw per
pick."""

from __future__ import annotations

from collections import Counter

import pytest

from sdk._local._sampling import NumpySampler

np = pytest.importorskip("numpy")


def logits_of(probs: list[float]) -> object:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray([probs], dtype=np.float32))


def test_greedy_is_argmax_and_draws_nothing() -> None:
    sampler = NumpySampler()
    assert sampler.greedy
    row = np.asarray([[0.1, 3.0, -np.inf, 2.9]], dtype=np.float32)
    assert sampler.pick(row) == 1
    assert sampler.pick(row[0]) == 1  # a 1-D row too
    assert NumpySampler(temperature=0).pick(row) == 1


def test_a_seed_makes_sampling_reproducible() -> None:
    row = logits_of([0.2, 0.3, 0.1, 0.4])
    a = NumpySampler(temperature=1.0, seed=7)
    b = NumpySampler(temperature=1.0, seed=7)
    picks = [a.pick(row) for _ in range(200)]
    assert picks == [b.pick(row) for _ in range(200)]
    assert len(set(picks)) == 4


def test_exactly_one_draw_per_pick() -> None:
    """Whatever the logits (a forced token or a spread), each pick consumes one number, so a
    run that asks at more positions (jump-forward) stays in step with one that asks fewer."""
    forced = np.full((1, 5), -np.inf, dtype=np.float32)
    forced[0, 3] = 0.0
    spread = logits_of([0.25, 0.25, 0.25, 0.25])
    a = NumpySampler(temperature=0.7, top_p=0.9, seed=3)
    b = NumpySampler(temperature=0.7, top_p=0.9, seed=3)
    for _ in range(5):
        assert a.pick(forced) == 3
        b._rng.random()  # the same number of draws, taken directly
    assert [a.pick(spread) for _ in range(50)] == [b.pick(spread) for _ in range(50)]


def test_forbidden_tokens_are_never_picked() -> None:
    row = np.zeros((1, 50), dtype=np.float32)
    row[0, ::2] = -np.inf
    sampler = NumpySampler(temperature=2.0, seed=1)
    assert all(sampler.pick(row) % 2 == 1 for _ in range(500))


def test_top_p_keeps_the_smallest_prefix_reaching_p() -> None:
    row = logits_of([0.5, 0.3, 0.15, 0.05])
    sampler = NumpySampler(temperature=1.0, top_p=0.8, seed=11)
    counts = Counter(sampler.pick(row) for _ in range(4000))
    assert set(counts) == {0, 1}  # 0.5 + 0.3 reaches 0.8
    assert 0.56 < counts[0] / 4000 < 0.69  # 0.5 / 0.8 = 0.625
    top = NumpySampler(temperature=1.0, top_p=0.1, seed=11)
    assert {top.pick(row) for _ in range(100)} == {0}  # the top token always stays


def test_temperature_sharpens_and_flattens() -> None:
    row = logits_of([0.6, 0.4])
    cold = NumpySampler(temperature=0.2, seed=5)
    hot = NumpySampler(temperature=5.0, seed=5)
    cold_share = sum(cold.pick(row) == 0 for _ in range(2000)) / 2000
    hot_share = sum(hot.pick(row) == 0 for _ in range(2000)) / 2000
    assert cold_share > 0.85  # 0.6^5 / (0.6^5 + 0.4^5) = 0.88
    assert 0.45 < hot_share < 0.58  # 0.6^0.2 / (...) = 0.52


@pytest.mark.parametrize(
    ("temperature", "top_p", "message"),
    [
        (1.0, 0.0, "top_p must be in"),
        (1.0, 1.5, "top_p must be in"),
        (1.0, float("nan"), "top_p must be in"),
        (-1.0, None, "temperature"),
        (float("inf"), None, "temperature must be a finite number"),
        (float("nan"), None, "temperature must be a finite number"),
    ],
)
def test_bad_parameters_are_value_errors(
    temperature: float, top_p: float | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        NumpySampler(temperature=temperature, top_p=top_p)


def _samplers(**options: object) -> list[object]:
    """The numpy sampler, and torch's where torch is installed (the same contract)."""
    made: list[object] = [NumpySampler(**options)]  # type: ignore[arg-type]
    try:
        from sdk._local._sampling import Sampler

        made.append(Sampler(**options))  # type: ignore[arg-type]
    except ImportError:
        pass
    return made


def _row(sampler: object, values: list[float]) -> object:
    row = np.asarray([values], dtype=np.float32)
    if type(sampler).__name__ == "Sampler":
        import torch

        return torch.from_numpy(row)
    return row


@pytest.mark.parametrize("temperature", [1e-310, 1e-30, 1e-6])
def test_a_tiny_temperature_is_greedy_and_never_picks_a_forbidden_token(
    temperature: float,
) -> None:
    # Dividing first overflowed the logits to inf (and inf - inf to NaN): a masked token won.
    values = [-np.inf, 2.0, -np.inf, 3.5, -np.inf, 1.0, -np.inf, -np.inf]
    for sampler in _samplers(temperature=temperature, seed=1):
        picks = {sampler.pick(_row(sampler, values)) for _ in range(50)}  # type: ignore[attr-defined]
        assert picks == {3}, type(sampler).__name__


@pytest.mark.parametrize("seed", [-1, -(2**70), 2**64 + 5, 2**70])
def test_every_int_is_a_seed(seed: int) -> None:
    # numpy's generator refuses negative seeds and torch's those past 64 bits: both take any
    # int, modulo 2**64, reproducibly.
    values = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    pairs = zip(
        _samplers(temperature=1.0, seed=seed), _samplers(temperature=1.0, seed=seed), strict=True
    )
    for a, b in pairs:
        first = [a.pick(_row(a, values)) for _ in range(64)]  # type: ignore[attr-defined]
        assert first == [b.pick(_row(b, values)) for _ in range(64)]  # type: ignore[attr-defined]
        assert len(set(first)) > 1


# --- the cure of a repetition: a frequency penalty over a window ---------------------------


def test_no_cure_no_penalty() -> None:
    from sdk._local._sampling import sampler_for

    assert sampler_for("llama.cpp").penalty is None
    assert sampler_for("llama.cpp", cures={"compact_whitespace", "no_thinking"}).penalty is None
    assert sampler_for("llama.cpp", cures={"less_repetition"}).penalty is not None


def test_the_penalty_turns_a_greedy_loop_off_its_token() -> None:
    """Token 0 leads token 1 by 2.5: greedy picks it for ever; with the penalty (1.0 per pick)
    it is picked until its lead is gone, then the two alternate. The -inf token stays out."""
    from sdk._local._sampling import RepetitionPenalty

    def row() -> object:
        return np.asarray([[3.0, 0.5, -np.inf, 0.0]], dtype=np.float32)

    plain = NumpySampler()
    assert [plain.pick(row()) for _ in range(10)] == [0] * 10
    cured = NumpySampler(penalty=RepetitionPenalty(penalty=1.0))
    picks = [cured.pick(row()) for _ in range(12)]
    assert picks[:3] == [0, 0, 0] and picks[3] == 1  # 3 - 3 < 0.5
    assert 2 not in picks and {0, 1} <= set(picks[3:])
    assert cured.penalty is not None and cured.penalty.lowered()[0] == picks.count(0)


def test_the_window_forgets_the_oldest_picks() -> None:
    from sdk._local._sampling import RepetitionPenalty

    penalty = RepetitionPenalty(penalty=0.5, window=3)
    for token in (7, 7, 8, 9):
        penalty.picked(token)
    assert penalty.lowered() == {7: 0.5, 8: 0.5, 9: 0.5}  # the first 7 left the window
    penalty.picked(9)
    assert penalty.lowered() == {8: 0.5, 9: 1.0}
    with pytest.raises(ValueError, match="penalty"):
        RepetitionPenalty(penalty=float("nan"))
    with pytest.raises(ValueError, match="window"):
        RepetitionPenalty(window=0)


def test_sampled_decoding_with_the_penalty_still_draws_once_per_pick() -> None:
    from sdk._local._sampling import RepetitionPenalty

    spread = logits_of([0.4, 0.3, 0.2, 0.1])
    a = NumpySampler(temperature=1.0, seed=5, penalty=RepetitionPenalty())
    b = NumpySampler(temperature=1.0, seed=5)
    for _ in range(20):
        a.pick(spread.copy())  # type: ignore[attr-defined]
        b._rng.random()
    assert a._rng.random() == b._rng.random()


def test_the_torch_sampler_applies_the_same_penalty() -> None:
    torch = pytest.importorskip("torch")
    from sdk._local._sampling import RepetitionPenalty, Sampler

    def row() -> object:
        return torch.tensor([[3.0, 0.5, float("-inf"), 0.0]])

    cured = Sampler(penalty=RepetitionPenalty(penalty=1.0))
    numpy_cured = NumpySampler(penalty=RepetitionPenalty(penalty=1.0))
    picks = [cured.pick(row()) for _ in range(12)]
    assert picks == [
        numpy_cured.pick(np.asarray([[3.0, 0.5, -np.inf, 0.0]], dtype=np.float32))
        for _ in range(12)
    ]
    assert picks[3] == 1 and 2 not in picks
