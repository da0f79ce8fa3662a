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

from cvxrank._io import atomic_output, write_atomic
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

__all__ = ["cpu_model", "environment", "write_report"]

#: Packages whose versions a report lists (when installed).
PACKAGES = ("cvxrank", "cvxpy", "numpy", "scipy", "pandas", "clarabel", "ecos", "osqp", "scs", "threadpoolctl",
            "joblib", "dask", "distributed", "matplotlib")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def environment() -> dict:
    """CPU, cores, OS, Python and package versions."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
            "python": sys.version.split()[0], "packages": versions}


def _fmt(df: pd.DataFrame, fmt: str) -> pd.DataFrame:
    return df.apply(lambda col: col.map(lambda v: "" if pd.isna(v) else format(v, fmt))
                    if pd.api.types.is_float_dtype(col) else col)


def _table(df: pd.DataFrame, fmt: str = ".3g", index: bool = True) -> str:
    frame = df.reset_index() if index else df
    return markdown_table(_fmt(frame, fmt), index=False)


def _figures(df, growth, prof, fig_dir: Path) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cvxrank._style import style
    from cvxrank.study.plots import plot_performance_profile, plot_scaling

    fig_dir.mkdir(parents=True, exist_ok=True)
    with style():
        return _draw_figures(plt, df, growth, prof, fig_dir, plot_performance_profile, plot_scaling)


def _draw_figures(plt, df, growth, prof, fig_dir, plot_performance_profile, plot_scaling) -> dict:
    made = {}
    for profile in pd.unique(df["profile"]):
        if (prof["profile"] == profile).any():
            fig, ax = plt.subplots(figsize=(7.5, 4.0))
            plot_performance_profile(prof, ax, profile=profile)
            name = f"performance-profile-{profile}.png"
            with atomic_output(fig_dir / name, suffix=".png", want_path=True) as target:
                fig.savefig(target, bbox_inches="tight", format="png")
            plt.close(fig)
            made[("profile", profile)] = name
        for instance in pd.unique(df["instance"]):
            sub = df[(df["instance"] == instance) & (df["profile"] == profile)]
            if sub["pairs"].nunique() < 2 or not sub["found"].any():
                continue
            fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
            plot_scaling(df, growth, axes[0], profile=profile, instance=instance, y="wall_time")
            plot_scaling(df, growth, axes[1], profile=profile, instance=instance, y="peak_memory")
            name = f"scaling-{instance}-{profile}.png"
            with atomic_output(fig_dir / name, suffix=".png", want_path=True) as target:
                fig.savefig(target, format="png")
            plt.close(fig)
            made[("scaling", instance, profile)] = name
    return made


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
    return out + ["", "## Environment", "",
                  f"- CPU: {env['cpu']} ({env['cores']} logical cores)",
                  f"- OS: {env['platform']}; Python {env['python']}",
                  "- Packages: " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
                  "- Solver versions as reported by the runs: " + ", ".join(f"{s} {v}" for s, v in versions), ""]


def _definition(df, study, time_limit) -> list[str]:
    inst = df.groupby(["instance", "size"], sort=False)[["documents", "pairs", "features"]].max().astype("Int64")
    out = ["## Study", "", "Instances (documents, pairs and features of the training data):", "", _table(inst), "",
           (f"- Formulations: {', '.join(pd.unique(df['formulation']))}; solvers: "
           f"{', '.join(pd.unique(df['solver']))}; profiles: {', '.join(pd.unique(df['profile']))}"),
           f"- Cost settings: {', '.join(pd.unique(df['cost']))}",
           f"- Time limit per run: {time_limit:g} s (build, compile, solve and certificate); {len(df)} runs"]
    if study is not None:
        solver, form, profile = study.reference
        table = options_table(study.solvers, study.profiles).rename_axis("solver")
        caps = {s: o for s, o in study.solver_options.items() if o}
        if caps:
            out.append("- Solver options added to every run (e.g. `cvxrank compare`'s default iteration caps, "
                       "the solver registry's `quick_max_iter`; a run that reaches a cap is a `user_limit` "
                       "row): " + "; ".join(f"{s} " + ", ".join(f"{k}={v}" for k, v in o.items())
                                            for s, o in caps.items()))
        if study.max_iter is not None:
            out.append(f"- Iteration cap per run: {study.max_iter:,} (each solver's own option name; not the "
                       "reference): a run that reaches it is a `user_limit` row on any machine")
        out += [(f"- Reference of each instance: {solver} on the {form} formulation at profile {profile.name} "
                f"(ε = {profile.tol:g}), certified by cvxrank's duality gap"), "",
                "Solver options of each profile (one table translates ε into every solver's names):", "",
                _table(table)]
    return out + ["", ("A run is *found* when its status is `optimal`: the solver finished and cvxrank's "
                       "certified relative duality gap is at most the profile's ε. `objective` is the hinge "
                       "objective (9) of SIGIR 2006 at the run's `w` (of the cost setting's variant, when it "
                       "names one: `variant=...`); `objective_error` and `w_error` are relative to the "
                       "reference of the same cost setting. Wall time counts building the CVXPY problem, "
                       "compiling, solving and the certificate. An `unsupported` row is a solver or formulation "
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
            out += [f"![performance profile {profile}]({rel}/{figs[('profile', profile)]})", ""]
    out += ["## Statuses", "", _table(status_counts(df)), "", "## Accuracy", "",
            ("Median over problems of the certified relative gap, the objective error and the distance to the "
             "reference `w`, for the runs found:"), ""]
    acc = (df[df["found"]].groupby(["formulation", "solver", "profile"], sort=False)
           [["relative_gap", "objective_error", "w_error"]].median())
    out += [_table(acc, ".1e") if len(acc) else "(no run was found)", ""]
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
    for key, name in figs.items():
        if key[0] == "scaling":
            out += [f"![scaling {key[1]} {key[2]}]({rel}/{name})", ""]
    return out


def _appendix(df) -> list[str]:
    cols = ["instance", "size", "pairs", "cost", "formulation", "solver", "profile", "status", "found",
            "wall_time", "iterations", "relative_gap", "objective_error", "w_error", "primal_residual",
            "peak_memory"]
    out = ["## All runs", "", _table(df[cols], ".3g", index=False), ""]
    failed = df[df["message"].astype(str) != ""]
    if len(failed):
        out += ["Messages of runs that failed:", "",
                _table(failed[["instance", "size", "formulation", "solver", "profile", "status", "message"]],
                       index=False), ""]
    return out


def write_report(df: pd.DataFrame, path, *, time_limit: float, title: str = "Solver comparison study",
                 figures_dir=None, study=None, command: str | None = None, sections=()) -> Path:
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
        Where figures go (default ``<report folder>/figures``); linked relatively.
    study : Study, optional
        Adds the definition (cost settings, reference, hash) and the options table.
    command : str, optional
        The command that produced the study, quoted in the report.
    sections : sequence of (str, str)
        Extra ``(title, Markdown)`` sections, placed after the findings.

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
    return path
