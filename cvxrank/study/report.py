"""A Markdown report of a study: environment, definition, tables and figures.

Figures are drawn with matplotlib's Agg backend into a folder next to the
report and linked relatively, so the report renders on GitHub and in MkDocs.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from cvxrank._io import write_atomic
from cvxrank.reporting import markdown_table
from cvxrank.study.profiles import options_table
from cvxrank.study.summary import (
    NOT_ENOUGH,
    growth_exponents,
    performance_profiles,
    shifted_geometric_means,
    status_counts,
    success_rates,
)

__all__ = ["blas_libraries", "cpu_model", "environment", "simd_extensions", "write_report"]

#: Packages whose versions a report lists (when installed).
PACKAGES = ("cvxrank", "cvxpy", "numpy", "scipy", "pandas", "clarabel", "ecos", "osqp", "scs", "threadpoolctl",
            "joblib", "dask", "distributed", "matplotlib")


def _cpuinfo() -> dict:
    """The first processor's fields of ``/proc/cpuinfo`` (empty off Linux)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if not line.strip():
                    break  # the first processor's block ends
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
    except OSError:
        pass
    return fields


def _l3_cache() -> str:
    """The size of the L3 cache of cpu0 (Linux sysfs), e.g. ``"32768K"``, or ""."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for index in sorted(base.glob("index*")):
            if (index / "level").read_text().strip() == "3":
                return (index / "size").read_text().strip()
    except OSError:
        pass
    return ""


def cpu_model() -> str:
    """The CPU as fully as the machine says: model name, vendor, family/model/stepping, clock, L3 cache, VM.

    ``/proc/cpuinfo`` and sysfs on Linux (a virtual machine may show only ``"AMD EPYC"`` as the model
    name: family, model and stepping then tell the generation); :func:`platform.processor` elsewhere.
    """
    info = _cpuinfo()
    name = info.get("model name") or platform.processor() or platform.machine() or "unknown"
    details = []
    if "vendor_id" in info:
        ids = ", ".join(f"{k} {info[k]}" for k in ("cpu family", "model", "stepping") if k in info)
        details.append(f"{info['vendor_id']}" + (f" {ids}" if ids else ""))
    if "cpu mhz" in info:
        try:
            details.append(f"{float(info['cpu mhz']):.0f} MHz")
        except ValueError:
            pass
    l3 = _l3_cache()
    if l3:
        kib = int(l3[:-1]) if l3[:-1].isdigit() and l3.endswith("K") else None
        details.append(f"L3 {kib // 1024} MiB" if kib and kib % 1024 == 0 else f"L3 {l3}")
    if "hypervisor" in info.get("flags", "").split():
        details.append("virtual machine")
    return name + (f" ({'; '.join(details)})" if details else "")


def blas_libraries() -> list[str]:
    """The BLAS libraries loaded here, with their versions (threadpoolctl), e.g. ``["openblas 0.3.30"]``."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a dependency of cvxrank
        return []
    return sorted({f"{lib.get('internal_api')} {lib.get('version')}" for lib in threadpool_info()
                   if lib.get("user_api") == "blas"})


def simd_extensions() -> list[str]:
    """The SIMD extensions this CPU has among those numpy's build dispatches to beyond its baseline, as numpy names
    them (``numpy.show_runtime()``'s ``found``), e.g. ``["X86_V3", "X86_V4", "AVX512_ICL"]``; empty where numpy
    does not say.

    numpy's ``argsort`` takes the widest of them, and the floor pass of ``cvxrank bench native`` sorts the scores:
    its counts compare only between runs with the same list (docs/native-measurements.md, "Measurements
    (2026-11-28, 05:35)").
    """
    try:  # numpy's own record of what it found (private: numpy 2 moved it from numpy.core to numpy._core)
        try:
            from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        except ImportError:  # pragma: no cover - numpy 1.x
            from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # pragma: no cover - a numpy without it
        return []
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def environment() -> dict:
    """CPU, cores, the SIMD extensions numpy uses (:func:`simd_extensions`), OS, Python, BLAS and package versions."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "simd": simd_extensions(), "platform": platform.platform(),
            "python": sys.version.split()[0], "blas": blas_libraries(), "packages": versions}


def _fmt(df: pd.DataFrame, fmt: str) -> pd.DataFrame:
    return df.apply(lambda col: col.map(lambda v: "" if pd.isna(v) else format(v, fmt))
                    if pd.api.types.is_float_dtype(col) else col)


def _table(df: pd.DataFrame, fmt: str = ".3g", index: bool = True) -> str:
    frame = df.reset_index() if index else df
    return markdown_table(_fmt(frame, fmt), index=False)


def _figures(df, growth, prof, fig_dir: Path) -> dict:
    """Draw the study's figures into ``fig_dir``, each as PNG and PDF (:func:`cvxrank.plots.save_figures`);
    ``{key: [png path, pdf path]}``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cvxrank._style import style
    from cvxrank.study.plots import plot_performance_profile, plot_scaling

    fig_dir.mkdir(parents=True, exist_ok=True)
    with style():
        return _draw_figures(plt, df, growth, prof, fig_dir, plot_performance_profile, plot_scaling)


def _draw_figures(plt, df, growth, prof, fig_dir, plot_performance_profile, plot_scaling) -> dict:
    from cvxrank._figures import save_figures

    made = {}
    for profile in pd.unique(df["profile"]):
        if (prof["profile"] == profile).any():
            fig, ax = plt.subplots(figsize=(7.5, 4.0))
            plot_performance_profile(prof, ax, profile=profile)
            made[("profile", profile)] = save_figures({f"performance-profile-{profile}": fig}, fig_dir)
            plt.close(fig)
        for instance in pd.unique(df["instance"]):
            sub = df[(df["instance"] == instance) & (df["profile"] == profile)]
            if sub["pairs"].nunique() < 2 or not sub["found"].any():
                continue
            fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
            plot_scaling(df, growth, axes[0], profile=profile, instance=instance, y="wall_time")
            plot_scaling(df, growth, axes[1], profile=profile, instance=instance, y="peak_memory")
            made[("scaling", instance, profile)] = save_figures({f"scaling-{instance}-{profile}": fig}, fig_dir)
            plt.close(fig)
    return made


def _image(alt: str, rel: str, paths) -> str:
    """A Markdown image of the figure's PNG, with a link to its vector file."""
    png, *vector = [os.path.basename(p) for p in paths]
    return f"![{alt}]({rel}/{png})" + "".join(f" ([{os.path.splitext(v)[1][1:].upper()}]({rel}/{v}))"
                                              for v in vector)


def findings(df: pd.DataFrame, rates: pd.DataFrame, sgm: pd.DataFrame, growth: pd.DataFrame) -> list[str]:
    """Sentences read off the tables (the report's "Findings"; nothing in them is typed by hand)."""
    out = []
    label = lambda idx: f"{idx[1]}/{idx[0]}"
    for profile in sgm.columns:
        col = sgm[profile].dropna().sort_values()
        if col.empty:
            continue
        if not df.loc[df["profile"].astype(str) == str(profile), "found"].any():
            out.append(f"Profile {profile}: no run was found, so no method is faster than another.")
            continue
        text = f"Profile {profile}: fastest {label(col.index[0])}"
        if len(col) > 1:
            text += f"; next {label(col.index[1])} ({col.iloc[1]:.2f}x), slowest {label(col.index[-1])} " \
                    f"({col.iloc[-1]:.2f}x) in shifted geometric mean of wall time."
        out.append(text)
    always = [label(i) for i, r in rates.iterrows() if (r == 100).all()]
    if always:
        out.append(f"Found every problem at every profile: {', '.join(always)}.")
    bad = df[df["status"] != "optimal"].groupby(["formulation", "solver"], sort=False)["status"]
    for idx, statuses in bad:
        counts = statuses.value_counts()
        out.append(f"{label(idx)}: " + ", ".join(f"{n} {s}" for s, n in counts.items())
                   + f" of {int(((df['formulation'] == idx[0]) & (df['solver'] == idx[1])).sum())} runs.")
    for (instance, profile), sub in growth.groupby(["instance", "profile"], sort=False):
        for kind, what in (("time", "wall time"), ("memory", "peak memory")):
            fit = sub[np.isfinite(sub[f"{kind}_exponent"])].sort_values(f"{kind}_exponent")
            if fit.empty:
                if kind == "time" and len(sub):
                    out.append(f"{instance}, profile {profile}: growth with size: {NOT_ENOUGH}; found runs at "
                               f"{int(sub['n_sizes'].max())} sizes spanning {np.nanmax(sub['span']):.1f}x.")
                continue
            lo, hi = fit.iloc[0], fit.iloc[-1]
            out.append(f"{instance}, profile {profile}: {what} grows as pairs^{lo[f'{kind}_exponent']:.2f} for "
                       f"{lo.solver}/{lo.formulation} up to pairs^{hi[f'{kind}_exponent']:.2f} for "
                       f"{hi.solver}/{hi.formulation} (fits over {int(fit['n_sizes'].max())} sizes).")
    def column(name):  # a table of other origin may lack the newer columns
        return pd.to_numeric(df[name], errors="coerce") if name in df.columns else pd.Series(np.nan, index=df.index)

    at_cap = df[df["found"].astype(bool) & (column("iterations") >= column("work_limit"))]
    if len(at_cap):
        methods = ", ".join(f"{n} {m}" for m, n in (at_cap["solver"] + "/" + at_cap["formulation"]).value_counts()
                            .items())
        words = ", ".join(sorted(set(at_cap.get("solver_status", pd.Series(dtype=str)).astype(str)) - {""}))
        words = words or "not recorded"
        out.append(f"{len(at_cap)} run(s) used their whole iteration cap and are still certified within ε, so they "
                   f"are `optimal` (the certificate decides; their solvers said {words}): {methods}.")
    certify = column("certify_time")
    if certify.notna().any():
        r = df.loc[certify.idxmax()]
        out.append(f"Longest certificate: {r['certify_time']:.3g} s of a {r['wall_time']:.3g} s run (solve "
                   f"{r['solve_time']:.3g} s), {r['solver']}/{r['formulation']} on {r['instance']} size {r['size']}, "
                   f"profile {r['profile']}; the `certify_time` column has every run's.")
    peak = df.loc[df["peak_memory"].idxmax()] if df["peak_memory"].notna().any() else None
    if peak is not None:
        out.append(f"Largest peak memory: {peak['peak_memory']:.0f} MiB, {peak['solver']}/{peak['formulation']} on "
                   f"{peak['instance']} size {peak['size']} ({peak['pairs']:.0f} pairs), profile {peak['profile']}.")
    return out


def _header(df, title, study, command, env) -> list[str]:
    out = [f"# {title}", "",
           f"Written {time.strftime('%Y-%m-%d %H:%M')} by `cvxrank.study.write_report`"
           + (f"; study hash `{study.hash}`." if study is not None else ".")]
    if command:
        out += ["", "Produced by:", "", "```", command, "```"]
    versions = sorted({(r.solver, r.solver_version) for r in df.itertuples() if r.solver_version})
    threads = sorted({int(t) for t in pd.to_numeric(df.get("blas_threads", pd.Series(dtype=float)),
                                                     errors="coerce").dropna()})
    attrs = df.attrs
    if attrs.get("scheduler"):
        jobs = f"on the Dask cluster {attrs['scheduler']} (each run in its own process on a worker)"
    elif attrs.get("jobs"):
        jobs = (f"{attrs['jobs']} at a time on this machine, each in its own process "
                f"({attrs.get('isolation', 'forkserver')} isolation)")
    else:
        jobs = "not recorded (the table was not made by run_study in this process)"
    return out + ["", "## Environment", "",
                  f"- CPU: {env['cpu']}; {env['cores']} logical cores",
                  f"- OS: {env['platform']}; Python {env['python']}",
                  "- BLAS: " + (", ".join(env.get("blas") or ["none loaded"]))
                  + "; threads per run as the workers measured them (threadpoolctl, `blas_threads` column): "
                  + (", ".join(map(str, threads)) if threads else "not recorded"),
                  f"- Runs: {jobs}; {_repeats_text(df)}",
                  "- Packages: " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
                  "- Solver versions as reported by the runs: " + ", ".join(f"{s} {v}" for s, v in versions), ""]


def _repeats_text(df) -> str:
    """How often each run was made, and the spread of its wall time when more than once."""
    repeats = pd.to_numeric(df["repeats"], errors="coerce") if "repeats" in df.columns else pd.Series(dtype=float)
    n = int(repeats.max()) if repeats.notna().any() else 1
    if n <= 1:
        return "each run once (no repeats, so every time is one measurement and no spread is shown)"
    lo, hi, mid = (pd.to_numeric(df[c], errors="coerce") for c in ("wall_time_min", "wall_time_max", "wall_time"))
    spread = ((hi - lo) / mid).where(mid > 0)
    text = (f"each run {n} times, each time in a fresh process; times are medians over the repeats, "
            "`wall_time_min` and `wall_time_max` the spread")
    if spread.notna().any():
        r = df.loc[spread.idxmax()]
        text += (f"; (max - min) / median of the wall time: median {spread.median():.1%} over the runs, largest "
                 f"{spread.max():.1%} ({r['solver']}/{r['formulation']} on {r['instance']} size {r['size']}, "
                 f"profile {r['profile']})")
    return text


def _definition(df, study, time_limit) -> list[str]:
    groups = df.groupby(["instance", "size"], sort=False)
    inst = groups[["documents", "pairs", "features"]].max().astype("Int64")
    inst = _fmt(inst, "g").assign(reference_gap=_fmt(groups[["reference_gap"]].max(), ".1e")["reference_gap"])
    timeouts = int((df["status"] == "timeout").sum())
    out = ["## Study", "", ("Instances (documents, pairs and features of the training data; `reference_gap`: the "
                            "certified relative gap of the instance's reference, the largest over cost settings):"),
           "", _table(inst), "",
           (f"- Formulations: {', '.join(pd.unique(df['formulation']))}; solvers: "
           f"{', '.join(pd.unique(df['solver']))}; profiles: {', '.join(pd.unique(df['profile']))}"),
           f"- Cost settings: {', '.join(pd.unique(df['cost']))}",
           (f"- Time limit per run: {time_limit:g} s (build, compile, solve and certificate), a safety net: "
            f"{timeouts} of {len(df)} runs reached it")]
    if study is not None:
        solver, form, profile = study.reference
        table = options_table(study.solvers, study.profiles).rename_axis("solver")
        caps = {s: study.run_options(s) for s in study.solvers}
        out.append("- Iteration cap of every run (not the reference), in each solver's own option: "
                   + "; ".join(f"{s} " + (", ".join(f"{k}={v}" for k, v in o.items()) or "none") for s, o in caps.items())
                   + (" (`max_iter` of the study)" if study.max_iter is not None else
                      " (the study's default, `cvxrank.study.definition.iteration_cap`: the registry's quick cap "
                      "where it has one, else the work limit of `cvxrank.solve`)")
                   + ". The caps, not the clock, end runs, so the table is the same on any machine; the time "
                     "limit is a safety net (a `timeout` row is a run it caught).")
        out += [(f"- Reference of each instance: {solver} on the {form} formulation at profile {profile.name} "
                f"(ε = {profile.tol:g}), certified by cvxrank's duality gap (its certified relative gap per "
                "instance and cost setting is the `reference_gap` column)"), "",
                ("Solver options of each profile (one table translates ε into every solver's names; "
                 "cvxrank's own `tol` is not among them):"), "", _table(table), "",
                ("cvxrank's `tol` is no solver option: it is the certified relative duality gap a run must reach "
                 "to be `optimal`, ε of the profile ("
                 + ", ".join(f"{p.name} {p.tol:g}" for p in study.profiles)
                 + "), and the stopping rule of the native solvers.")]
    return out + ["", ("A run is *found* when its status is `optimal`: cvxrank's certified relative duality gap "
                       "is at most the profile's ε, with no slack. The certificate decides the status, as in "
                       "`cvxrank.solve`: a run its iteration cap stopped short of ε is `user_limit`; a run that "
                       "used its whole cap yet is certified within ε is `optimal` (`solver_status` keeps the "
                       "solver's own word, `work_limit` the cap). `objective` is the hinge "
                       "objective (9) of SIGIR 2006 at the run's `w` (of the cost setting's variant, when it "
                       "names one: `variant=...`); `objective_error` and `w_error` are relative to the "
                       "reference of the same cost setting; an error at or below the reference's own certified "
                       "gap (`reference_gap`) is below what the reference can resolve and is marked so. Wall "
                       "time counts building the CVXPY problem, compiling, solving and the certificate; "
                       "`certify_time` is the certificate alone; `solve_time` is the solver's own report, or "
                       "cvxrank's wall clock around the solver call where the solver reports 0 s, a negative "
                       "time or none (`solve_time_source`). An `unsupported` row is a solver or formulation "
                       "that cannot state the variant: left out of success rates and mean times, counted as "
                       "not solved in performance profiles."), ""]


def _results(df, rates, sgm, growth, figs, rel) -> list[str]:
    out = ["## Success rate", "", "Percent of runs found, per method and profile:", "", _table(rates, ".0f"), "",
           "## Computation time", "",
           ("Shifted geometric mean of the wall time (shift 10 s; a run not found counts as the time limit), "
            "relative to the best method of each profile (qpbenchmark's metric: 1 is the best, 2 twice as slow):"),
           "", _table(sgm, ".2f"), ""]
    for profile in pd.unique(df["profile"]):
        if ("profile", profile) in figs:
            out += [_image(f"performance profile {profile}", rel, figs[("profile", profile)]), ""]
    out += ["## Statuses", "", _table(status_counts(df)), "", "## Accuracy", "",
            ("Median over problems of the certified relative gap, the objective error and the distance to the "
             "reference `w`, for the runs found, next to the reference's own certified gap:"), ""]
    found = df[df["found"].astype(bool)]
    found = found.assign(below_ref=pd.to_numeric(found["objective_error"], errors="coerce")
                         <= pd.to_numeric(found["reference_gap"], errors="coerce"))
    groups = found.groupby(["formulation", "solver", "profile"], sort=False)
    acc = groups[["relative_gap", "objective_error", "reference_gap", "w_error"]].median()
    if len(acc):
        shown = _fmt(acc, ".1e")
        shown["below_ref"] = [f"{int(k)} of {int(n)}" for k, n in zip(groups["below_ref"].sum(), groups.size())]
        out += [_table(shown), "", ("`reference_gap` is the reference's own certified relative gap (median over the "
                                    "problems): an objective error at or below it is below the reference's "
                                    "accuracy and says only that the run is as accurate as the reference can "
                                    f"tell; `below_ref` counts such runs ({int(found['below_ref'].sum())} of "
                                    f"{len(found)} found runs)."), ""]
    else:
        out += ["(no run was found)", ""]
    if df["ndcg10"].notna().any():
        nd = df.groupby(["formulation", "solver", "profile"], sort=False)["ndcg10"].mean().unstack("profile")
        out += ["Mean held-out NDCG@10:", "", _table(nd, ".4f"), ""]
    out += ["## Growth with problem size", "",
            ("Exponents `b` of `time ≈ a·pairs^b` and `memory ≈ a'·pairs^b'` fitted on log-log axes over the "
             "found runs (peak memory above the worker's baseline):"), ""]
    shown = growth[np.isfinite(growth["time_exponent"]) | np.isfinite(growth["memory_exponent"])]
    shown = shown.drop(columns=["time_intercept", "memory_intercept"])
    out += [_table(shown.set_index(["instance", "profile", "formulation", "solver"]), ".2f")
            if len(shown) else f"({NOT_ENOUGH} for any method)", ""]
    for key, paths in figs.items():
        if key[0] == "scaling":
            out += [_image(f"scaling {key[1]} {key[2]}", rel, paths), ""]
    return out


def _appendix(df) -> list[str]:
    cols = ["instance", "size", "pairs", "cost", "formulation", "solver", "profile", "status", "solver_status",
            "found", "wall_time", "solve_time", "certify_time", "iterations", "work_limit", "relative_gap",
            "objective_error", "w_error", "primal_residual", "peak_memory"]
    if "repeats" in df.columns and pd.to_numeric(df["repeats"], errors="coerce").max() > 1:
        cols[cols.index("wall_time") + 1:cols.index("wall_time") + 1] = ["wall_time_min", "wall_time_max"]
    shown = _fmt(df[cols], ".3g")
    own = df["solve_time_source"].astype(str) == "cvxrank"
    shown.loc[own, "solve_time"] = shown.loc[own, "solve_time"] + " (c)"
    below = pd.to_numeric(df["objective_error"], errors="coerce") <= pd.to_numeric(df["reference_gap"],
                                                                                  errors="coerce")
    shown.loc[below, "objective_error"] = shown.loc[below, "objective_error"] + " *"
    out = ["## All runs", "",
           ("Times in seconds, peak memory in MiB. `solve_time` marked (c) was timed by cvxrank (the solver "
            f"reported 0 s or none; {int(own.sum())} runs); `objective_error` marked * is at or below the "
            f"reference's certified gap ({int(below.sum())} runs). `status` is cvxrank's verdict from its "
            "certificate, `solver_status` the solver's own; `work_limit` the iteration cap."), "",
           _table(shown, index=False), ""]
    failed = df[df["message"].astype(str) != ""]
    if len(failed):
        out += ["Messages of runs that failed:", "",
                _table(failed[["instance", "size", "formulation", "solver", "profile", "status", "message"]],
                       index=False), ""]
    return out


def write_report(df: pd.DataFrame, path, *, time_limit: float, title: str = "Solver comparison study",
                 figures_dir=None, study=None, command: str | None = None, sections=(),
                 written: list | None = None) -> Path:
    """Write the Markdown report of a study table.

    Parameters
    ----------
    df : DataFrame
        A study table (:func:`cvxrank.study.run_study`).
    path : path
        The Markdown file to write.
    time_limit : float
        The per-run limit (failures count as this in the shifted geometric mean).
    title : str
    figures_dir : path, optional
        Where figures go (default ``<report folder>/figures``), each as PNG and PDF
        (:func:`cvxrank.plots.save_figures`); the PNG is shown, the PDF linked, relatively.
    study : Study, optional
        Adds the definition (cost settings, reference, hash) and the options table.
    command : str, optional
        The command that produced the study, quoted in the report.
    sections : sequence of (str, str)
        Extra ``(title, Markdown)`` sections, placed after the findings.
    written : list, optional
        Receives the paths of the files written: the figures (PNG, PDF), then the report.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig_dir = Path(figures_dir) if figures_dir is not None else path.parent / "figures"
    rates = success_rates(df)
    sgm = shifted_geometric_means(df, time_limit=time_limit)
    growth = growth_exponents(df)
    figs = _figures(df, growth, performance_profiles(df), fig_dir)
    out = _header(df, title, study, command, environment()) + _definition(df, study, time_limit)
    out += ["## Findings", "", "Read off the tables below:", ""]
    out += [f"- {line}" for line in findings(df, rates, sgm, growth)] + [""]
    for heading, text in sections:
        out += [f"## {heading}", "", text.strip(), ""]
    out += _results(df, rates, sgm, growth, figs, os.path.relpath(fig_dir, path.parent)) + _appendix(df)
    write_atomic(path, "\n".join(out))
    if written is not None:
        written.extend([*(p for paths in figs.values() for p in paths), str(path)])
    return path
