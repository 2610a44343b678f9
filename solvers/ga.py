"""Genetic algorithm on activity lists and mode lists, decoded by the serial SGS.

Each individual is a precedence-feasible activity list and a mode list.
Parents are drawn by binary tournament. The peak crossover (after Valls et
al. 2008) finds in the mother's schedule the time window of highest resource
use, its length drawn between :data:`PEAK_MIN` and :data:`PEAK_MAX` of the
makespan; the child takes the father's order for the tasks the mother starts
before the window, the mother's order for the tasks in it and the father's
order for the rest. Every list is kept in start order, so the child stays
precedence-feasible; the window's tasks keep the mother's modes, the others the
father's. Mutation swaps neighbours not linked by a precedence and redraws
modes; a child whose modes overdraw a budget has them repaired. Every child is
decoded, justified (forward-backward improvement) and re-encoded from its
justified schedule. Survival is elitist: the best of parents and children,
without two identical schedules. A population that has converged or stalled is
drawn anew around its best individual: orders from the best schedule's start
times plus noise :data:`NEAR` times as wide as their span, with the best modes.
One generation runs as one numba kernel.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from numba import njit

from planner.errors import InputError
from planner.interrupt import Halt, run_interruptibly
from planner.model import Problem
from planner.result import Progress, Result
from planner.schedule import Schedule
from planner.solvers.encoding import (
    COST,
    EDGE_TASK,
    ENERGY,
    MODE_DURATION,
    SEG_DEMAND,
    SEG_DURATION,
    SEG_OFFSET,
    Data,
    least_energy_modes,
    schedule_lists,
)
from planner.solvers.passes_numba import evaluate
from planner.solvers.search import DEFAULT_SCHEDULES, Search, interruptible
from planner.solvers.sgs import priorities
from planner.solvers.sgs_numba import repair_budgets

STALL = 25
"""Generations without improvement after which the population is drawn anew."""

PEAK_MIN, PEAK_MAX = 0.1, 0.5
"""Range of the peak crossover's window length, as shares of the mother's makespan."""

NEAR = 0.3
"""Noise on the best start times when a population is drawn anew, as a share of their span."""


@njit(cache=True)
def _linked(pred_ptr, pred, a: int, b: int) -> bool:
    for e in range(pred_ptr[b], pred_ptr[b + 1]):  # noqa: SIM110 (numba has no generators)
        if pred[e, EDGE_TASK] == a:
            return True
    return False


@njit(cache=True)
def segment_use(d: Data) -> np.ndarray:
    """Per segment, the sum over resources of its demand over the base capacity (a node
    resource: over the capacity of a node of mean size)."""
    out = np.zeros(d.seg.shape[0])
    g, k = d.n_glob, d.n_kind
    for s in range(out.shape[0]):
        for r in range(g):
            if d.capacity[r] > 0:
                out[s] += d.seg[s, SEG_DEMAND + r] / d.capacity[r]
        for r in range(k):
            pooled = 0
            for v in range(d.n_node):
                pooled += d.capacity[g + v * k + r]
            if pooled > 0:
                out[s] += d.seg[s, SEG_DEMAND + g + r] * d.n_node / pooled
    return out


@njit(cache=True)
def peak_window(
    d: Data,
    weight: np.ndarray,
    start: np.ndarray,
    mode: np.ndarray,
    lo: float,
    hi: float,
    rng: np.random.Generator,
) -> tuple[int, int]:
    """The window ``[t1, t2)`` of highest resource use of a schedule.

    Use at a tick is the sum of the running segments' ``weight`` (see
    :func:`segment_use`); the window's length is drawn uniformly between ``lo``
    and ``hi`` times the makespan (at least one tick).
    """
    n = start.shape[0]
    T = 0
    for i in range(n):
        T = max(T, start[i] + d.mode[mode[i], MODE_DURATION])
    # the use as its changes, then summed: one step per segment, not one per tick
    use = np.zeros(T + 1)
    for i in range(n):
        m = mode[i]
        for s in range(d.seg_start[m], d.seg_start[m + 1]):
            w = weight[s]
            if w > 0:
                t0 = start[i] + d.seg[s, SEG_OFFSET]
                use[t0] += w
                use[t0 + d.seg[s, SEG_DURATION]] -= w
    for t in range(1, T + 1):
        use[t] += use[t - 1]
    length = max(1, min(T, int(T * (lo + (hi - lo) * rng.random()))))
    acc = 0.0
    for t in range(length):
        acc += use[t]
    best, best_t = acc, 0
    for t in range(length, T):
        acc += use[t] - use[t - length]
        if acc > best:
            best, best_t = acc, t - length + 1
    return best_t, best_t + length


@njit(cache=True)
def peak_cross(mo, mm, ms, fo, fm, child_o, child_m, t1: int, t2: int, part) -> None:
    """Child of mother ``(mo, mm)`` with starts ``ms`` and father ``(fo, fm)``.

    Tasks the mother starts before ``t1`` come first in the father's order,
    then those she starts in ``[t1, t2)`` in her order (with her modes), then
    the rest in the father's order. Starts never decrease along a precedence,
    so each part holds every predecessor of its tasks but those of earlier
    parts: the child is precedence-feasible. ``part`` is scratch space.
    """
    n = mo.shape[0]
    for t in range(n):
        part[t] = 0 if ms[t] < t1 else (1 if ms[t] < t2 else 2)
    k = 0
    for which in range(3):
        src = mo if which == 1 else fo
        for p in range(n):
            t = src[p]
            if part[t] == which:
                child_o[k] = t
                k += 1
    for t in range(n):
        child_m[t] = mm[t] if part[t] == 1 else fm[t]


@njit(cache=True)
def _mutate(pred_ptr, pred, mode_start, order, modes, rate: float, rng) -> None:
    # Arrays, not the Data tuple: a tuple argument costs reference counting per call.
    n = order.shape[0]
    for p in range(n - 1):
        if rng.random() < rate and not _linked(pred_ptr, pred, order[p], order[p + 1]):
            order[p], order[p + 1] = order[p + 1], order[p]
    for t in range(n):
        count = mode_start[t + 1] - mode_start[t]
        if count > 1 and rng.random() < rate:
            modes[t] = mode_start[t] + rng.integers(0, count)


@njit(cache=True)
def _same(a, b) -> bool:
    for k in range(a.shape[0]):  # noqa: SIM110 (numba has no generators)
        if a[k] != b[k]:
            return False
    return True


@njit(cache=True)
def _survive(pop_o, pop_m, pop_s, fit, kid_o, kid_m, kid_s, kid_fit, n_kids) -> None:
    """Keep the best individuals of distinct schedules of children and parents.

    Children come first on ties.
    """
    size = fit.shape[0]
    all_o = np.concatenate((kid_o[:n_kids], pop_o))
    all_m = np.concatenate((kid_m[:n_kids], pop_m))
    all_s = np.concatenate((kid_s[:n_kids], pop_s))
    all_f = np.concatenate((kid_fit[:n_kids], fit))
    rank = np.argsort(all_f, kind="mergesort")
    chosen = np.empty(size, dtype=np.int64)
    n_chosen = 0
    for r in rank:
        dup = False
        for c in range(n_chosen - 1, -1, -1):
            if all_f[chosen[c]] != all_f[r]:
                break
            if _same(all_s[chosen[c]], all_s[r]) and _same(all_m[chosen[c]], all_m[r]):
                dup = True
                break
        if not dup:
            chosen[n_chosen] = r
            n_chosen += 1
            if n_chosen == size:
                break
    k = 0
    while n_chosen < size:
        chosen[n_chosen] = rank[k]
        n_chosen += 1
        k += 1
    for p in range(size):
        pop_o[p] = all_o[chosen[p]]
        pop_m[p] = all_m[chosen[p]]
        pop_s[p] = all_s[chosen[p]]
        fit[p] = all_f[chosen[p]]


@njit(cache=True, nogil=True)
def generation(d: Data, pop, kids, rate, peak, weight, rng, work, best, allowance) -> int:
    """Breed, evaluate and select one generation; returns the schedules generated.

    ``pop`` and ``kids`` hold ``(orders, modes, starts, values)``; ``peak`` is
    the window length range ``(lo, hi)`` of the crossover and ``weight`` the
    segments' resource use (:func:`segment_use`); ``work`` holds the
    decoder's ``(start, mode, placed, nodes, index)`` and the halt flag (``[1]``, set:
    return before the next schedule); ``best`` holds ``(value[1], start, mode,
    placed)`` of the incumbent, updated in place.
    """
    pop_o, pop_m, pop_s, fit = pop
    kid_o, kid_m, kid_s, kid_fit = kids
    start, mode, placed, nodes, index, halt = work
    best_value, best_start, best_mode, best_placed = best
    size, n = pop_o.shape
    pred_ptr, pred, mode_start = d.pred_ptr, d.pred, d.mode_start
    part = np.empty(n, dtype=np.int64)
    spent = 0
    n_kids = 0
    while n_kids < size and spent < allowance and halt[0] == 0:
        a, b = rng.integers(0, size), rng.integers(0, size)
        mother = a if fit[a] <= fit[b] else b
        a, b = rng.integers(0, size), rng.integers(0, size)
        father = a if fit[a] <= fit[b] else b
        for side in range(2):
            if n_kids >= size or spent >= allowance or halt[0]:
                break
            x, y = (mother, father) if side == 0 else (father, mother)
            # A mother without a schedule (budgets or deadlines unmet) has no window:
            # the child copies the father.
            t1, t2 = 0, 0
            if fit[x] < np.inf:
                t1, t2 = peak_window(d, weight, pop_s[x], pop_m[x], peak[0], peak[1], rng)
            peak_cross(
                pop_o[x],
                pop_m[x],
                pop_s[x],
                pop_o[y],
                pop_m[y],
                kid_o[n_kids],
                kid_m[n_kids],
                t1,
                t2,
                part,
            )
            _mutate(pred_ptr, pred, mode_start, kid_o[n_kids], kid_m[n_kids], rate, rng)
            repair_budgets(d.mode, mode_start, d.slack, kid_m[n_kids], rng)
            value, passes = evaluate(
                d,
                kid_o[n_kids],
                kid_m[n_kids],
                start,
                mode,
                placed,
                nodes,
                index,
                allowance - spent,
                False,
            )
            spent += passes
            kid_fit[n_kids] = value
            kid_s[n_kids] = start
            if value < best_value[0]:
                best_value[0] = value
                best_start[:] = start
                best_mode[:] = mode
                best_placed[:] = placed
            n_kids += 1
    _survive(pop_o, pop_m, pop_s, fit, kid_o, kid_m, kid_s, kid_fit, n_kids)
    return spent


@njit(cache=True, nogil=True)
def initial(d: Data, pop_o, pop_m, pop_s, fit, work, best, allowance) -> int:
    """Evaluate a population in place (its orders and modes are set by the caller); a set
    halt flag ends it before the next schedule."""
    start, mode, placed, nodes, index, halt = work
    best_value, best_start, best_mode, best_placed = best
    spent = 0
    for p in range(pop_o.shape[0]):
        if halt[0]:
            break
        value, passes = evaluate(
            d, pop_o[p], pop_m[p], start, mode, placed, nodes, index, allowance - spent, False
        )
        spent += passes
        fit[p] = value
        pop_s[p] = start
        if value < best_value[0]:
            best_value[0] = value
            best_start[:] = start
            best_mode[:] = mode
            best_placed[:] = placed
    return spent


def first_population(
    search: Search, size: int, rng: np.random.Generator, lft: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Activity lists from the LFT rule and noisy LFT keys, and mode lists.

    The first list follows the LFT rule; the others take
    the LFT value plus uniform noise as wide as the LFT range, a biased random
    sampling that starts better than uniform random orders. Every second
    individual lets the decoder pick the mode that finishes first; the others
    draw modes at random, but for the energy and cost objectives every fourth takes
    every task's mode of least draw. Those lists are repaired to meet the budgets
    (:func:`repair_budgets`).
    """
    dec = search.decoder
    d = dec.data
    n = d.n
    spread = max(float(np.ptp(lft)), 1.0)
    orders = np.empty((size, n), dtype=np.int64)
    modes = np.empty((size, n), dtype=np.int64)
    counts = np.diff(d.mode_start)
    least = least_energy_modes(d) if d.objective in (ENERGY, COST) else None
    for p in range(size):
        keys = lft if p == 0 else lft + rng.random(n) * spread
        orders[p] = dec.order(keys)
        if p % 2 == 0:
            modes[p] = -1
        elif p % 4 == 3 and least is not None:
            modes[p] = least
        else:
            modes[p] = d.mode_start[:-1] + (rng.random(n) * counts).astype(np.int64)
        repair_budgets(d.mode, d.mode_start, d.slack, modes[p], rng)  # leaves -1 lists alone
    return orders, modes


def around_best(
    search: Search, size: int, rng: np.random.Generator, start: np.ndarray, mode: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Activity lists from the best start times plus noise, all with the best modes.

    The noise on each start is uniform, :data:`NEAR` times as wide as the span of
    the starts: the new population lies near the best schedule.
    """
    dec = search.decoder
    keys = start.astype(np.float64)
    spread = NEAR * max(float(np.ptp(keys)), 1.0)
    orders = np.empty((size, dec.data.n), dtype=np.int64)
    for p in range(size):
        orders[p] = dec.order(keys + rng.random(dec.data.n) * spread)
    return orders, np.repeat(mode[None, :], size, axis=0)


def solve_ga(
    problem: Problem,
    *,
    schedules: int | None = None,
    time_limit: float | None = None,
    seed: int = 0,
    population: int = 40,
    mutation: float = 0.2,
    stall: int = STALL,
    workers: int = 1,
    initial_solution: Schedule | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Result:
    """Genetic algorithm with serial SGS decoding and justification.

    Parameters
    ----------
    problem
        The problem.
    schedules
        Budget of generated schedules (every SGS pass counts, justification
        passes too). With neither budget, 5,000 schedules.
    time_limit
        Seconds.
    seed
        Random seed; the same seed and budget give the same schedule.
    population
        Population size (at least 2).
    mutation
        Probability per position of a neighbour swap and per task of a new mode.
    stall
        Generations without improvement after which the population is drawn
        anew around the best schedule.
    workers
        Independent runs in parallel threads, with seeds ``seed``, ``seed + 1``, ...
        They share the schedule budget and each has the whole time limit; the best
        schedule of all runs is returned. One run by default.
    initial_solution
        A warm start (e.g. the old plan when re-planning): the first individual is its
        order (tasks by start) in its modes; the LFT individual comes second.
    progress
        Called on each improvement.

    Returns
    -------
    Result
        The best schedule, with ``history`` (one row per generation of the run that
        found it) and, for several runs, ``stats["runs"]``. Ctrl-C ends every run and
        keeps the best schedule so far (``interrupted``).
    """
    if int(population) < 2:
        raise InputError(f"population must be at least 2, got {population}")
    if int(workers) < 1:
        raise InputError(f"workers must be at least 1, got {workers}")
    settings: dict[str, Any] = {
        "population": int(population),
        "mutation": float(mutation),
        "stall": int(stall),
        "initial": None if initial_solution is None else schedule_lists(problem, initial_solution),
    }
    if int(workers) == 1:
        return interruptible(
            "ga",
            lambda stop: _evolve(problem, schedules, time_limit, seed, settings, progress, stop),
        )
    if schedules is None and time_limit is None:
        schedules = DEFAULT_SCHEDULES
    runs = int(workers) if schedules is None else max(1, min(int(workers), int(schedules)))
    budgets: list[int | None] = [None] * runs
    if schedules is not None:
        budgets = [int(schedules) // runs + (k < int(schedules) % runs) for k in range(runs)]
    return _parallel(problem, budgets, time_limit, seed, settings, progress)


def _parallel(
    problem: Problem,
    budgets: list[int | None],
    time_limit: float | None,
    seed: int,
    settings: dict[str, Any],
    progress: Callable[[Progress], None] | None,
) -> Result:
    """One run per budget in its own thread (the kernels release the GIL); the best result.

    A run that meets the lower bound stops the others (:meth:`Search.offer`). Ctrl-C stops
    every run and keeps the best schedule (a second Ctrl-C, while they end, aborts); an
    error in one run stops every run and is raised again once they have ended.
    """
    t0 = time.perf_counter()
    lock = threading.Lock()
    best = [math.inf]
    stop = Halt()

    def tell(event: Progress) -> None:
        with lock:
            if progress is not None and event.objective is not None and event.objective < best[0]:
                best[0] = event.objective
                progress(event)

    out: list[Result | BaseException | None] = [None] * len(budgets)

    def run(k: int) -> None:
        try:
            out[k] = _evolve(problem, budgets[k], time_limit, seed + k, settings, tell, stop)
        except BaseException as exc:  # raised again in the calling thread
            out[k] = exc
            stop.set()

    def every_run() -> None:
        threads = [
            threading.Thread(target=run, args=(k,), name=f"ga-{k}", daemon=True)
            for k in range(len(budgets))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    _, interrupted = run_interruptibly(every_run, stop.set, "ga")
    for item in out:
        if isinstance(item, BaseException):
            raise item
    results = [r for r in out if isinstance(r, Result)]
    pick = min(results, key=lambda r: math.inf if r.objective is None else r.objective)
    runs = [
        {"seed": seed + k, "objective": r.objective, "schedules": r.stats["schedules"]}
        for k, r in enumerate(results)
    ]
    stats = {**pick.stats, "schedules": sum(r["schedules"] for r in runs), "runs": runs}
    interrupted = interrupted or any(r.interrupted for r in results)
    if interrupted and pick.schedule is not None:
        pick = replace(pick, reason="stopped by Ctrl-C; the best schedule so far is returned")
    return replace(
        pick,
        runtime=time.perf_counter() - t0,
        interrupted=interrupted,
        stats=stats,
    )


def _evolve(
    problem: Problem,
    schedules: int | None,
    time_limit: float | None,
    seed: int,
    settings: dict[str, Any],
    progress: Callable[[Progress], None] | None,
    stop: Halt | None,
) -> Result:
    """One GA run (see :func:`solve_ga`); it ends early once ``stop`` is set."""
    max_stall = settings["stall"]
    search = Search(problem, "ga", schedules, time_limit, progress, stop)
    size = settings["population"]
    rng = np.random.default_rng(seed)
    dec = search.decoder
    d = dec.data
    lft = priorities(problem, "lft")
    pop_o, pop_m = first_population(search, size, rng, lft)
    if settings["initial"] is not None:
        keys, modes = settings["initial"]
        pop_o[1], pop_m[1] = pop_o[0], pop_m[0]
        pop_o[0], pop_m[0] = dec.order(keys), modes
    pop_s = np.zeros_like(pop_o)
    weight = segment_use(d)
    fit = np.full(size, np.inf)
    pop = (pop_o, pop_m, pop_s, fit)
    kids = (np.empty_like(pop_o), np.empty_like(pop_m), np.empty_like(pop_o), np.full(size, np.inf))
    work = (dec.start, dec.mode, dec.placed, dec.nodes, dec.index, search.stop.flag)
    best = (
        np.full(1, np.inf),
        np.zeros(d.n, dtype=np.int64),
        np.zeros(d.n, dtype=np.int64),
        np.full_like(dec.placed, -1),
    )
    count = {"generations": 0, "restarts": 0}  # read after Ctrl-C has ended the loop

    def body() -> None:
        # The first individual alone first: a large instance then has an incumbent after
        # one schedule, not after a whole population.
        for part in (slice(0, 1), slice(1, size)):
            search.used += initial(
                d, pop_o[part], pop_m[part], pop_s[part], fit[part], work, best,
                search.allowance(),
            )  # fmt: skip
            search.offer(best[0][0], best[1], best[2], best[3])
        search.record(0, fit)
        idle = 0
        while not search.done():
            count["generations"] += 1
            before = best[0][0]
            search.used += generation(
                d,
                pop,
                kids,
                settings["mutation"],
                (PEAK_MIN, PEAK_MAX),
                weight,
                rng,
                work,
                best,
                search.allowance(),
            )
            idle = idle + 1 if best[0][0] >= before else 0
            if (idle >= max_stall or fit[0] == fit[-1]) and not search.done():
                # Converged: keep the best individual, draw the others around its schedule
                # (anew while there is none: budgets or deadlines unmet so far).
                count["restarts"] += 1
                idle = 0
                if np.isfinite(best[0][0]):
                    pop_o[1:], pop_m[1:] = around_best(search, size - 1, rng, best[1], best[2])
                else:
                    pop_o[1:], pop_m[1:] = first_population(search, size - 1, rng, lft)
                search.used += initial(
                    d, pop_o[1:], pop_m[1:], pop_s[1:], fit[1:], work, best, search.allowance()
                )
            search.offer(best[0][0], best[1], best[2], best[3])
            search.record(count["generations"], fit)

    search.run(body)
    search.offer(best[0][0], best[1], best[2], best[3])
    return search.result(population=size, **count, seed=seed)
