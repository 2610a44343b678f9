"""Particle swarm optimisation on random keys, decoded by the serial SGS.

A particle's position holds one priority key per task (smaller goes first
among eligible tasks) and one mode key per task in ``[0, 1)`` (the mode is
``floor(key * number of modes)``). The velocity update is
``w * v + c1 * r1 * (pbest - x) + c2 * r2 * (lbest - x)``, clamped, where
``lbest`` is the best personal best among the particle's neighbours on a ring
(``ring`` places each side; the global best when ``ring`` is 0). Each
particle's modes are repaired to meet the budgets
(:func:`~solvers.sgs_numba.repair_budgets`); it is decoded by the serial SGS and
justified; its keys are then re-encoded from the justified schedule (each task's
rank in start order), so the swarm learns from the justification. A swarm that
stalls is scattered anew. One iteration runs as one numba kernel.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from planner.errors import InputError
from planner.interrupt import Halt
from planner.model import Problem
from planner.result import Progress, Result
from planner.schedule import Schedule
from planner.solvers.encoding import Data, schedule_lists
from planner.solvers.passes_numba import evaluate, keys_to_order
from planner.solvers.search import Search, interruptible
from planner.solvers.sgs import priorities
from planner.solvers.sgs_numba import repair_budgets

STALL = 25
"""Iterations without improvement after which the particles are scattered anew (on J120
at 5,000 schedules, scattering after 10 idle iterations cost 0.12 points of deviation)."""

RING = 5
"""Neighbours each side on the ring whose best position attracts a particle: on J120 at
5,000 schedules the ring ends 0.4-0.5 points closer to the bound than the global best."""

MODE_VMAX = 0.25
"""Velocity clamp of the mode keys: modes need larger steps than the order keys."""


@njit(cache=True)
def _decode(d: Data, x, mk, order, modes) -> None:
    order[:] = keys_to_order(d, x, False)
    mode_start = d.mode_start
    for t in range(d.n):
        count = mode_start[t + 1] - mode_start[t]
        modes[t] = mode_start[t] + min(count - 1, int(mk[t] * count))


@njit(cache=True)
def _encode(d: Data, order, modes, x, mk) -> None:
    n = d.n
    mode_start = d.mode_start
    for k in range(n):
        x[order[k]] = k / n
    for t in range(n):
        count = mode_start[t + 1] - mode_start[t]
        mk[t] = (modes[t] - mode_start[t] + 0.5) / count


@njit(cache=True, nogil=True)
def iteration(d: Data, swarm, pbest, pfit, gbest, params, ring, rng, work, best, allowance) -> int:
    """Move, decode, justify and re-encode every particle once; returns schedules generated.

    ``swarm`` is ``(x, mk, v, vm)``, ``pbest`` is ``(x, mk)`` per particle,
    ``gbest`` is ``(x, mk)`` of the swarm, ``params`` is ``(w, c1, c2, vmax, vmax_modes)``;
    ``work`` is the decoder's ``(start, mode, placed, nodes, index)`` and the halt flag
    (``[1]``, set: return before the next schedule).
    """
    x, mk, v, vm = swarm
    px, pmk = pbest
    gx, gmk = gbest
    w, c1, c2, vmax, vmax_modes = params
    start, mode, placed, nodes, index, halt = work
    best_value, best_start, best_mode, best_placed = best
    size, n = x.shape
    order = np.empty(n, dtype=np.int64)
    modes = np.empty(n, dtype=np.int64)
    spent = 0
    for p in range(size):
        if spent >= allowance or halt[0]:
            break
        # The social attractor: the best personal best within ``ring`` places of p on a
        # ring of particles (the global best when ring is 0 or no neighbour has one).
        nb = (p - ring) % size
        for o in range(1 - ring, ring + 1):
            q = (p + o) % size
            if pfit[q] < pfit[nb]:
                nb = q
        sx, smk = gx, gmk
        if ring > 0 and pfit[nb] < np.inf:
            sx, smk = px[nb], pmk[nb]
        for t in range(n):
            r1, r2 = rng.random(), rng.random()
            v[p, t] = w * v[p, t] + c1 * r1 * (px[p, t] - x[p, t]) + c2 * r2 * (sx[t] - x[p, t])
            v[p, t] = min(vmax, max(-vmax, v[p, t]))
            x[p, t] += v[p, t]
            r1, r2 = rng.random(), rng.random()
            vm[p, t] = (
                w * vm[p, t] + c1 * r1 * (pmk[p, t] - mk[p, t]) + c2 * r2 * (smk[t] - mk[p, t])
            )
            vm[p, t] = min(vmax_modes, max(-vmax_modes, vm[p, t]))
            mk[p, t] = min(0.999999, max(0.0, mk[p, t] + vm[p, t]))
        _decode(d, x[p], mk[p], order, modes)
        repair_budgets(d.mode, d.mode_start, d.slack, modes, rng)
        value, passes = evaluate(
            d, order, modes, start, mode, placed, nodes, index, allowance - spent, False
        )
        spent += passes
        if value < np.inf:
            _encode(d, order, modes, x[p], mk[p])
        if value <= pfit[p]:
            pfit[p] = value
            px[p] = x[p]
            pmk[p] = mk[p]
        if value < best_value[0]:
            best_value[0] = value
            best_start[:] = start
            best_mode[:] = mode
            best_placed[:] = placed
            gx[:] = x[p]
            gmk[:] = mk[p]
    return spent


def solve_pso(
    problem: Problem,
    *,
    schedules: int | None = None,
    time_limit: float | None = None,
    seed: int = 0,
    particles: int = 40,
    inertia: float = 0.1,
    c1: float = 1.5,
    c2: float = 1.5,
    vmax: float = 0.05,
    stall: int = STALL,
    ring: int = RING,
    initial_solution: Schedule | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Result:
    """Particle swarm on random keys with serial SGS decoding and justification.

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
    particles
        Swarm size (at least 1).
    inertia, c1, c2, vmax
        Velocity update weights and clamp of the order keys.
    stall
        Iterations without improvement after which the particles are scattered anew.
    ring
        Neighbours each side whose best personal best attracts a particle; 0 for the
        swarm's global best.
    initial_solution
        A warm start (e.g. the old plan when re-planning): the first particle's keys
        are its order (tasks by start) and its modes.
    progress
        Called on each improvement.

    Returns
    -------
    Result
        The best schedule, with ``history`` (one row per iteration).
    """
    if int(particles) < 1:
        raise InputError(f"particles must be at least 1, got {particles}")
    ring = int(ring)
    if ring < 0:
        raise InputError(f"ring must be at least 0, got {ring}")
    max_stall = int(stall)

    def swarm(stop: Halt) -> Result:
        search = Search(problem, "pso", schedules, time_limit, progress, stop)
        size = int(particles)
        rng = np.random.default_rng(seed)
        dec = search.decoder
        d = dec.data
        n = d.n
        x = rng.random((size, n))
        lft = priorities(problem, "lft")
        x[0] = (lft - lft.min()) / max(float(np.ptp(lft)), 1.0)
        mk = rng.random((size, n))
        if initial_solution is not None:
            keys, modes = schedule_lists(problem, initial_solution)
            _encode(d, dec.order(keys), modes, x[0], mk[0])
        v = rng.uniform(-vmax, vmax, (size, n))
        vm = rng.uniform(-MODE_VMAX, MODE_VMAX, (size, n))
        pfit = np.full(size, np.inf)
        swarm = (x, mk, v, vm)
        pbest = (x.copy(), mk.copy())
        gbest = (x[0].copy(), mk[0].copy())
        work = (dec.start, dec.mode, dec.placed, dec.nodes, dec.index, search.stop.flag)
        best = (
            np.full(1, np.inf),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.full_like(dec.placed, -1),
        )
        params = (float(inertia), float(c1), float(c2), float(vmax), MODE_VMAX)
        count = {"iterations": 0, "restarts": 0}  # read after Ctrl-C has ended the loop

        def body() -> None:
            idle = 0
            while not search.done():
                count["iterations"] += 1
                before = best[0][0]
                search.used += iteration(
                    d, swarm, pbest, pfit, gbest, params, ring, rng, work, best, search.allowance()
                )
                idle = idle + 1 if best[0][0] >= before else 0
                if idle >= max_stall:
                    # Stalled: scatter the particles again, their order and mode keys; personal
                    # and global bests stay.
                    count["restarts"] += 1
                    idle = 0
                    x[:] = rng.random((size, n))
                    v[:] = rng.uniform(-vmax, vmax, (size, n))
                    mk[:] = rng.random((size, n))
                    vm[:] = rng.uniform(-MODE_VMAX, MODE_VMAX, (size, n))
                search.offer(best[0][0], best[1], best[2], best[3])
                search.record(count["iterations"], pfit)

        search.run(body)
        search.offer(best[0][0], best[1], best[2], best[3])
        return search.result(particles=size, **count, seed=seed)

    return interruptible("pso", swarm)
