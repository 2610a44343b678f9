"""The objectives of the CP-SAT model (:mod:`models.cpsat_model`): the makespan, the
weighted completion of jobs, a stability term, the energy in whole units and the cost
under a tariff (the price summed from tick 0, piecewise linear in time). A mixin of the
model's builder: its methods read the variables the builder has made.
"""

from __future__ import annotations

import math
from itertools import pairwise

from ortools.sat.python import cp_model

from planner.arrays import FS
from planner.errors import InputError
from planner.model import Problem, Tariff
from planner.times import tick_seconds


def _price_edges(tariff: Tariff, lo: int, hi: int) -> list[int]:
    """The ticks in ``(lo, hi]`` where the tariff's price changes."""
    edges = {e for w in tariff.windows for e in (w.start, w.end)}
    if tariff.period is None:
        return [e for e in edges if lo < e <= hi]
    out = []
    for first in range(lo - lo % tariff.period, hi + 1, tariff.period):
        out.extend(first + e for e in edges if lo < first + e <= hi)
    return out


def energy_units(problem: Problem, horizon: int) -> tuple[list[list[int]], int, float]:
    """The energy objective (:func:`planner.metrics.energy_terms`) in whole units: per task,
    per mode, its draw; per tick of makespan, the draw over it; the unit in kWh, a power of
    ten that keeps the largest objective within 10**9 units."""
    from planner.metrics import energy_terms

    per, over = energy_terms(problem)
    top = sum(max(row) for row in per) + over * horizon
    unit = 10.0 ** (math.ceil(math.log10(top)) - 9) if top > 0 else 1.0
    return [[round(e / unit) for e in row] for row in per], round(over / unit), unit


def weight_scale(weights: list[float]) -> int:
    """Smallest power of ten (up to 10**6) that makes every weight an integer."""
    for digits in range(7):
        scale = 10**digits
        if all(abs(w * scale - round(w * scale)) < 1e-9 for w in weights):
            return scale
    return 10**6


class Objectives:
    """The builder's objective methods (mixed into :class:`models.cpsat_model._Builder`,
    which sets ``p``, ``a``, ``m`` and the tasks' variables before calling
    :meth:`_objective`)."""

    def _objective(self) -> None:
        if self.p.objective == "energy":
            self._energy()
            return
        if self.p.objective == "cost":
            self._cost()
            return
        a = self.a
        weighted = self.p.objective == "weighted_completion"
        weights = [float(w) for w in a.job_weight] if weighted else []
        stable = self.stability > 0 and bool(self.reference)
        scale = weight_scale(weights + ([self.stability] if stable else []))
        terms: list[object] = []
        if weighted:
            for j, w in enumerate(a.job_weight):
                ends = [self.end[i] for i in range(a.n_tasks) if a.task_job[i] == j]
                if not ends:
                    continue
                c = self.m.new_int_var(0, self.h, f"c{j}")
                self.m.add_max_equality(c, ends)
                self.out.completion[j] = c
                self.out.hinted.append((c, ("completion", j)))
                terms.append(round(float(w) * scale) * c)
        else:
            has_fs_succ = {
                int(b) for b, k in zip(a.prec_before, a.prec_kind, strict=True) if k == FS
            }
            mk = self.m.new_int_var(self.lower, self.h, "makespan")
            for i in range(a.n_tasks):
                if i not in has_fs_succ:
                    self.m.add(mk >= self.end[i])
            self.out.makespan = mk
            self.out.hinted.append((mk, ("makespan",)))
            terms.append(scale * mk)
        self.out.objective_scale = scale
        if stable:
            self._shifts(round(self.stability * scale))
            terms.extend(self.out.shift_weight * d for d in self.out.shifts)
        self.m.minimize(sum(terms))

    def _power_makespan(self) -> cp_model.IntVar:
        """The makespan variable of the energy and cost objectives, after every task's end.

        Raises
        ------
        InputError
            With a stability term, which these objectives do not take.
        """
        if self.stability > 0 and self.reference:
            raise InputError("stability applies to the makespan and weighted completion objectives")
        mk = self.m.new_int_var(self.lower, self.h, "makespan")
        for i in range(self.a.n_tasks):
            self.m.add(mk >= self.end[i])
        self.out.makespan = mk
        self.out.hinted.append((mk, ("makespan",)))
        return mk

    def _energy(self) -> None:
        """Minimise the energy: every mode's draw above idle, and the idle draw (with the
        problem's ``makespan_watts``) over the makespan, in whole units (:func:`energy_units`)."""
        mk = self._power_makespan()
        per, over, unit = energy_units(self.p, self.h)
        terms: list[object] = [over * mk]
        for i, coeffs in enumerate(per):
            lits = self.out.mode_lits[i]
            if lits:
                terms.extend(c * lit for c, lit in zip(coeffs, lits, strict=True) if c)
            else:
                terms.append(coeffs[0])
        self.out.objective_scale = 1 / unit
        self.out.objective_slack = 0.5 * (len(per) + self.h) / self.out.objective_scale
        self.m.minimize(sum(terms))

    def _cost(self) -> None:
        """Minimise the cost: every segment's draw times the tariff's price over its ticks,
        and the draw over the makespan (idle and ``makespan_watts``) times the price over
        ``[0, makespan)``. The price summed from tick 0 is piecewise linear in time; where a
        time may fall in several of its pieces, one Boolean per piece says which (prices in
        whole units of the smallest power of ten that makes them whole, watts whole)."""
        from planner.metrics import cost_terms

        mk = self._power_makespan()
        tariff = self.p.tariff
        assert tariff is not None  # the problem's validator asks for one
        prices = weight_scale([tariff.price, *(w.price for w in tariff.windows)])
        self.price_scale = prices
        per, over = cost_terms(self.p)
        terms: list[object] = []
        paid_at: dict[tuple[int, int], object] = {}  # per (task, offset from its start)
        if round(over):
            terms.append(round(over) * self._paid(mk, self.lower, self.h, "mk"))
        for i, modes in enumerate(per):
            start, (lo, hi) = self.out.start[i], self.window[i]
            lits = self.out.mode_lits[i]
            for k, segs in enumerate(modes):
                parts = []
                for offset, duration, watts in segs:
                    a, b = offset, offset + duration
                    for at in (a, b):
                        if (i, at) not in paid_at:
                            paid_at[i, at] = self._paid(start + at, lo + at, hi + at, f"p{i}_{at}")
                    parts.append(round(watts) * (paid_at[i, b] - paid_at[i, a]))
                parts = [p for p in parts if not isinstance(p, int) or p]
                if not parts:
                    continue
                if not lits:
                    terms.extend(parts)
                    continue
                paid = sum(parts)
                top = sum(round(w) * self._upto(hi + a + d) for a, d, w in segs)
                c = self.m.new_int_var(0, top, f"cost{i}_{k}")
                self.m.add(c == paid).only_enforce_if(lits[k])
                self.m.add(c == 0).only_enforce_if(~lits[k])
                terms.append(c)
        self.out.objective_scale = prices * 3.6e6 / tick_seconds(self.p.time_unit)
        # watts rounded to whole watts: half a watt at the dearest price over every segment
        rate = max([tariff.price, *(w.price for w in tariff.windows)]) * prices
        ticks = sum(max(sum(d for _, d, _ in segs) for segs in modes) for modes in per)
        slack = 0.5 * rate * (ticks + self.h)
        self.out.objective_slack = slack / self.out.objective_scale
        self.m.minimize(sum(terms))

    def _upto(self, t: int) -> int:
        """The tariff's price summed over ``[0, t)`` in whole price units."""
        if t not in self.paid:
            self.paid[t] = round(self.p.tariff.upto(t) * self.price_scale)  # type: ignore[union-attr]
        return self.paid[t]

    def _paid(self, at: object, lo: int, hi: int, name: str) -> object:
        """The tariff's price summed over ``[0, at)`` for a time ``at`` in ``[lo, hi]``: a
        linear expression where the price is one over ``[lo, hi]``, else a variable that
        one Boolean per piece of constant price ties to ``at``."""
        tariff = self.p.tariff
        assert tariff is not None
        edges = sorted({lo, hi + 1, *_price_edges(tariff, lo, hi)})
        pieces = list(pairwise(edges))
        if len(pieces) == 1:
            rate = self._upto(lo + 1) - self._upto(lo)
            return self._upto(lo) + rate * (at - lo)
        var = self.m.new_int_var(self._upto(lo), self._upto(hi), name)
        picks = []
        for a, b in pieces:
            z = self.m.new_bool_var(f"{name}_{a}")
            rate = self._upto(a + 1) - self._upto(a)
            self.m.add(at >= a).only_enforce_if(z)
            self.m.add(at <= b - 1).only_enforce_if(z)
            self.m.add(var == self._upto(a) + rate * (at - a)).only_enforce_if(z)
            picks.append(z)
        self.m.add_exactly_one(picks)
        return var

    def _shifts(self, weight: int) -> None:
        """One shift variable ``|start - reference|`` per task with a reference start."""
        self.out.shift_weight = weight
        for i, task in enumerate(self.p.tasks):
            if task.name not in self.reference:
                continue
            ref = int(self.reference[task.name])
            d = self.m.new_int_var(0, max(self.h, ref), f"shift{i}")
            self.m.add_abs_equality(d, self.out.start[i] - ref)
            self.out.shifts.append(d)
            self.out.hinted.append((d, ("shift", i, ref)))
