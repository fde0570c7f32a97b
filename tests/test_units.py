from __future__ import annotations

import pytest

from solver.units import GB, GiB, fmt_bytes, parse_quantity


@pytest.mark.parametrize(
    "text, kind, value",
    [
        ("500ms", "seconds", 0.5),
        ("0.5s", "seconds", 0.5),
        (0.05, "seconds", 0.05),
        ("24GiB", "bytes", 24 * 2**30),
        ("18 GB", "bytes", 18e9),
        ("800GB/s", "bytes_per_s", 800e9),
        ("756TFLOP/s", "flop_per_s", 756e12),
    ],
)
def test_quantities_parse_to_si(text, kind, value):
    assert parse_quantity(text, kind) == pytest.approx(value)


def test_unknown_unit_names_the_allowed_ones():
    with pytest.raises(ValueError, match="allowed: s, ms"):
        parse_quantity("5 parsecs", "seconds")


def test_bytes_are_shown_in_both_units():
    # 24 GiB is 25.77 GB: the two are never mixed up.
    assert fmt_bytes(24 * GiB) == "25.77 GB (24.00 GiB)"
    assert GB == 1e9 and GiB == 2**30
