"""Derive the polynomial coefficients of tdsl's native ``exp``/``expm1``/``log``.

    pip install mpmath && python benchmarks/fit_polynomials.py

Not run by the test suite (mpmath is not a dependency): it documents where the
constants in :mod:`tdsl.backend.llvm.math_approx` come from, and regenerates them.
Each polynomial is a weighted least-squares fit in 100-digit arithmetic on
Chebyshev nodes, with the relative error as the weight, which is within a
small factor of the minimax polynomial of the same degree; coefficients are
then rounded to the target precision and the fit is re-checked with the
rounded coefficients.  Printed: the coefficients and the maximum relative
error of each fit (before the rounding errors of evaluation, which the
accuracy benchmark measures).

- ``expm1(r) ~ r + r**2 * P(r)`` on ``|r| <= ln(2)/2`` (plus a margin for the
  rounding of the reduction): ``exp`` is ``1 + expm1`` of the reduced argument.
- ``(2 * atanh(s) - 2 * s) / s ~ z * Q(z)`` with ``z = s**2``, ``s = f / (2 + f)``,
  ``1 + f`` in ``[sqrt(2)/2, sqrt(2)]``: fdlibm's form of ``log(1 + f)``.
- ``tanh(x) ~ x + x z T(z)`` on ``|x| <= 0.625`` and ``sinh(x) ~ x + x z S(z)`` on
  ``|x| <= 1``, ``z = x**2``: the small arguments, where the formulas through
  ``expm1`` lose accuracy.
- ``erf(x) ~ x + x E(z)`` (``z = x**2``) on ``|x| <= 1.25`` (f32) or ``0.84375`` (f64),
  ``erf(t) ~ erx + D(t - 1)`` on ``[0.84375, 1.25]`` (f64) and ``log(erfc(t)) ~ L(t)``
  on ``1.25 <= t <= 4`` (f32) or ``6`` (f64), where ``erf`` rounds to 1 beyond:
  :mod:`tdsl.backend.llvm.math_erf`, all evaluated in f64.  ``L``'s error is
  weighted by ``erfc(t) / erf(t)``, its effect on ``erf = 1 - exp(L)``.
"""

from __future__ import annotations

import mpmath as mp  # pyright: ignore
import numpy as np

mp.mp.dps = 100


def lsq_fit(func, weight, lo, hi, degree, nodes=400):
    """Coefficients c0..c_degree minimizing sum(((p(t) - f(t)) / w(t))**2) over nodes."""
    ts = [
        (mp.mpf(lo) + mp.mpf(hi)) / 2
        + (mp.mpf(hi) - mp.mpf(lo)) / 2 * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / nodes)
        for k in range(nodes)
    ]
    a = mp.matrix(nodes, degree + 1)
    b = mp.matrix(nodes, 1)
    for i, t in enumerate(ts):
        w = weight(t)
        for j in range(degree + 1):
            a[i, j] = t**j / w
        b[i] = func(t) / w
    return list(mp.lu_solve(a.T * a, a.T * b))


def max_error(func, weight, approx, lo, hi, samples=20001):
    worst = mp.mpf(0)
    for k in range(samples):
        t = mp.mpf(lo) + (mp.mpf(hi) - mp.mpf(lo)) * k / (samples - 1)
        if t == 0:
            continue
        worst = max(worst, abs((approx(t) - func(t)) / weight(t)))
    return worst


def horner(coefficients, t):
    acc = mp.mpf(0)
    for c in reversed(coefficients):
        acc = acc * t + c
    return acc


def expm1_poly(dtype, degree):
    """P with expm1(r) = r + r**2 * P(r)."""
    bound = mp.log(2) / 2 * mp.mpf("1.01")

    def target(r):
        return (mp.expm1(r) - r) / r**2 if r != 0 else mp.mpf(1) / 2

    def weight(r):
        # relative to expm1(r) ~ r: error of r**2 * P divided by |expm1(r)|
        return abs(mp.expm1(r) / r**2) if r != 0 else mp.mpf(1) / 2

    coefficients = lsq_fit(target, weight, -bound, bound, degree)
    rounded = [mp.mpf(float(dtype(float(c)))) for c in coefficients]
    err = max_error(
        mp.expm1, lambda r: abs(mp.expm1(r)), lambda r: r + r**2 * horner(rounded, r), -bound, bound
    )
    return rounded, err


def log_poly(dtype, degree):
    """Q with (2 atanh(s) - 2 s) / s = z * Q(z), z = s**2."""
    smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1) * mp.mpf("1.001")
    zmax = smax**2

    def target(z):
        s = mp.sqrt(z)
        return (2 * mp.atanh(s) - 2 * s) / (s * z) if z != 0 else mp.mpf(2) / 3

    coefficients = lsq_fit(target, lambda z: mp.mpf(1), mp.mpf(0), zmax, degree)
    rounded = [mp.mpf(float(dtype(float(c)))) for c in coefficients]

    def log1p_approx(s):
        # error relative to log(1+f) = 2 atanh(s) of the term s * z * Q(z)
        z = s * s
        return 2 * s + s * z * horner(rounded, z)

    err = max_error(
        lambda s: 2 * mp.atanh(s), lambda s: abs(2 * mp.atanh(s)), log1p_approx, -smax, smax
    )
    return rounded, err


def odd_poly(name, func, bound, dtype, degree):
    """T with func(x) = x + x * z * T(z), z = x**2, on |x| <= bound."""
    zmax = mp.mpf(bound) ** 2

    def target(z):
        x = mp.sqrt(z)
        return (func(x) - x) / (x * z)

    def weight(z):
        return mp.mpf(1)

    lo = zmax * mp.mpf("1e-30")
    coefficients = lsq_fit(target, weight, lo, zmax, degree)
    rounded = [mp.mpf(float(dtype(float(c)))) for c in coefficients]
    err = max_error(
        func,
        lambda x: abs(func(x)),
        lambda x: x + x * x * x * horner(rounded, x * x),
        mp.mpf(0),
        mp.mpf(bound),
    )
    return rounded, err


def erf_small_poly(bound, degree):
    """E with erf(x) = x + x E(x**2) on |x| <= bound (f64 coefficients), the error
    relative to erf."""
    bound = mp.mpf(bound)

    def ratio(z):
        x = mp.sqrt(z)
        return mp.erf(x) / x if z != 0 else 2 / mp.sqrt(mp.pi)

    coefficients = lsq_fit(lambda z: ratio(z) - 1, ratio, mp.mpf(0), bound**2, degree)
    rounded = [mp.mpf(float(c)) for c in coefficients]
    err = max_error(lambda z: ratio(z) - 1, ratio, lambda z: horner(rounded, z), 0, bound**2)
    return rounded, err


ERF_ONE = 0.845062911510467529297
"""fdlibm's ``erx``: erf(1) to 24 bits."""


def erf_mid_poly(degree):
    """D with erf(t) = ERF_ONE + D(t - 1) on [0.84375, 1.25], the error relative to erf."""
    lo, hi = mp.mpf("0.84375") - 1, mp.mpf("1.25") - 1

    def target(s):
        return mp.erf(s + 1) - mp.mpf(ERF_ONE)

    def weight(s):
        return mp.erf(s + 1)

    coefficients = lsq_fit(target, weight, lo, hi, degree)
    rounded = [mp.mpf(float(c)) for c in coefficients]
    err = max_error(target, weight, lambda s: horner(rounded, s), lo, hi)
    return rounded, err


def erf_large_poly(top, degree):
    """L with log(erfc(t)) = L(t) on [1.25, top], the error weighted by
    erfc(t) / erf(t): the relative error it makes in erf = 1 - exp(L)."""

    def weight(t):
        return mp.erf(t) / mp.erfc(t)

    def target(t):
        return mp.log(mp.erfc(t))

    lo, hi = mp.mpf("1.25"), mp.mpf(top)
    coefficients = lsq_fit(target, weight, lo, hi, degree)
    rounded = [mp.mpf(float(c)) for c in coefficients]
    err = max_error(target, weight, lambda t: horner(rounded, t), lo, hi)
    return rounded, err


def main() -> None:
    for name, dtype, degree in (("f32", np.float32, 5), ("f64", np.float64, 10)):
        coefficients, err = expm1_poly(dtype, degree)
        print(f"EXPM1_{name.upper()} = ({', '.join(repr(float(c)) for c in coefficients)})")
        print(f"    # max relative error {mp.nstr(err, 3)} (2**{mp.nstr(mp.log(err, 2), 4)})")
    for name, dtype, degree in (("f32", np.float32, 3), ("f64", np.float64, 6)):
        coefficients, err = log_poly(dtype, degree)
        print(f"LOG_{name.upper()} = ({', '.join(repr(float(c)) for c in coefficients)})")
        print(f"    # max relative error {mp.nstr(err, 3)} (2**{mp.nstr(mp.log(err, 2), 4)})")
    for fname, func, bound, degrees in (
        ("TANH", mp.tanh, "0.625", (("f32", np.float32, 5), ("f64", np.float64, 11))),
        ("SINH", mp.sinh, "1", (("f32", np.float32, 3), ("f64", np.float64, 6))),
    ):
        for name, dtype, degree in degrees:
            coefficients, err = odd_poly(fname, func, bound, dtype, degree)
            print(f"{fname}_{name.upper()} = ({', '.join(repr(float(c)) for c in coefficients)})")
            print(f"    # max relative error {mp.nstr(err, 3)} (2**{mp.nstr(mp.log(err, 2), 4)})")
    erf_fits = {
        "ERF_E_F32": lambda: erf_small_poly("1.25", 8),
        "ERF_L_F32": lambda: erf_large_poly("4", 7),
        "ERF_E_F64": lambda: erf_small_poly("0.84375", 10),
        "ERF_D_F64": lambda: erf_mid_poly(13),
        "ERF_L_F64": lambda: erf_large_poly("6", 17),
    }
    for label, fit in erf_fits.items():
        coefficients, err = fit()
        print(f"{label} = ({', '.join(repr(float(c)) for c in coefficients)})")
        print(f"    # max relative error {mp.nstr(err, 3)} (2**{mp.nstr(mp.log(err, 2), 4)})")


if __name__ == "__main__":
    main()
