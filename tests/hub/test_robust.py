"""Robust aggregation rules: clipping, trimmed mean and median, on plain tensors."""

from __future__ import annotations

import torch

from computeshare_desktop.hub.robust import NormClipper, combine, trim_count


def test_median_and_trimmed_mean_outvote_one_wild_update() -> None:
    honest = [torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.2, -0.8, 2.2]),
              torch.tensor([0.8, -1.2, 1.8])]
    wild = torch.tensor([1e6, -1e6, 0.0])
    assert torch.equal(combine([*honest[:2], wild], "median"), torch.tensor([1.2, -1.0, 2.0]))
    trimmed = combine([*honest, wild], "trimmed-mean")  # n=4: one dropped at each end
    assert torch.allclose(trimmed, torch.tensor([1.1, -1.1, 1.9]))
    assert torch.allclose(combine(honest, "mean"), torch.tensor([1.0, -1.0, 2.0]))
    assert [trim_count(n) for n in (1, 2, 3, 4, 8, 9)] == [0, 0, 1, 1, 2, 2]
    assert torch.equal(combine([honest[0]], "median"), honest[0])


def test_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    values = [torch.tensor([v]) for v in (4.0, 1.0, 3.0, 100.0)]
    assert torch.equal(combine(values, "median"), torch.tensor([3.5]))


def test_clipping_bounds_an_update_scaled_by_100_to_the_honest_norms() -> None:
    clipper = NormClipper(factor=2.0)
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        clipper.clip([torch.randn(100, generator=gen) for _ in range(2)])
    honest = torch.randn(100, generator=gen)
    clipped = clipper.clip([honest, honest * 100])
    assert torch.equal(clipped[0], honest)
    assert float(clipped[1].norm()) <= 2.0 * 1.2 * float(honest.norm())
    assert torch.allclose(clipped[1] / clipped[1].norm(), honest / honest.norm())
    assert clipper.clipped == 1


def test_the_very_first_updates_are_clipped_to_the_smallest_norm() -> None:
    clipper = NormClipper(factor=2.0)
    small, huge = torch.ones(4), torch.ones(4) * 1e4
    out = clipper.clip([small, huge])
    assert float(out[1].norm()) == 2.0 * float(small.norm())


def test_an_update_whose_norm_overflows_counts_as_nothing() -> None:
    clipper = NormClipper()
    clipper.clip([torch.ones(3)])
    out = clipper.clip([torch.full((3,), 3e38)])
    assert torch.equal(out[0], torch.zeros(3))
