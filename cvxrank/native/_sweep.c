/*
 * Compiled sweeps of the pair-free oracles (cvxrank.native.oracle, cvxrank.native.band,
 * cvxrank.native.document_oracle).
 *
 * The same arithmetic as the numpy path, one pass per query instead of a few dozen numpy
 * operations over all documents: the boundaries by two pointers (the test s_p - s_k < margin is
 * monotone along a query's sorted scores, so every boundary only moves forward), the sums of
 * violated weight from prefix counts per grade, the band of near-margin pairs, and an insertion
 * sort from the previous order (scores move little between calls). Every result equals the numpy
 * path's bit for bit (the same floating-point test; the sums added in the same order), which
 * tests/test_native_kernels.py checks. No NumPy C API: the arrays arrive through the buffer
 * protocol, their dtypes and lengths checked by the Python wrappers (cvxrank/native/kernels.py)
 * and their lengths again here. Every function works on the queries qa..qb-1 (one shard) and
 * releases the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <float.h>

typedef struct {
    Py_buffer buf;
    int held;
} Arr;

/* The buffer of obj (C-contiguous, writable if asked) with items of itemsize bytes and at least min_items of
 * them; None only where the name starts with '?' (an optional array: a->held stays 0). */
static int get(PyObject *obj, Arr *a, int writable, Py_ssize_t itemsize, Py_ssize_t min_items, const char *name)
{
    a->held = 0;
    if (name[0] == '?') {
        name++;
        if (obj == Py_None) {
            return 0;
        }
    }
    else if (obj == Py_None) {
        PyErr_Format(PyExc_ValueError, "internal error: array %s is None", name);
        return -1;
    }
    if (PyObject_GetBuffer(obj, &a->buf, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    a->held = 1;
    if (a->buf.itemsize != itemsize || a->buf.len / itemsize < min_items) {
        PyErr_Format(PyExc_ValueError, "internal error: array %s has items of %zd bytes and %zd items, expected "
                     "%zd-byte items and at least %zd", name, a->buf.itemsize, a->buf.len / a->buf.itemsize,
                     itemsize, min_items);
        return -1;
    }
    return 0;
}

/* The grade codes: int32 or int64 (the oracle's layout type), at least m of them; *wide = 1 for int64. */
static int get_codes(PyObject *obj, Arr *a, Py_ssize_t m, int *wide)
{
    a->held = 0;
    if (PyObject_GetBuffer(obj, &a->buf, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    a->held = 1;
    if ((a->buf.itemsize != 4 && a->buf.itemsize != 8) || a->buf.len / a->buf.itemsize < m) {
        PyErr_SetString(PyExc_ValueError, "internal error: grade codes must be int32 or int64, one per document");
        return -1;
    }
    *wide = a->buf.itemsize == 8;
    return 0;
}

static void release(Arr *a, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i].held) {
            PyBuffer_Release(&a[i].buf);
        }
    }
}

/* Release the buffers and return None, or raise a ValueError with `error` when it is not NULL. */
static PyObject *done(Arr *a, int n, const char *error)
{
    release(a, n);
    if (error) {
        PyErr_SetString(PyExc_ValueError, error);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Zero the n buffers and take the call's first array (8-byte items, read-only), whose length m the others
 * are checked against: m, or -1 with the error set and nothing held. */
static Py_ssize_t first(PyObject *o, Arr *a, int n, const char *name)
{
    memset(a, 0, sizeof(Arr) * (size_t)n);
    if (get(o, &a[0], 0, 8, 0, name)) {
        release(a, n);
        return -1;
    }
    return a[0].buf.len / 8;
}

/* A CSR matrix's indptr as the first of n arrays (int64, starting at 0): its rows m, or -1 with an error set and the
 * arrays released; *nnz is indptr[m]. */
static Py_ssize_t get_indptr(PyObject *o, Arr *a, int n, Py_ssize_t *nnz)
{
    Py_ssize_t m1 = first(o, a, n, "indptr");
    if (m1 < 1) {
        if (m1 == 0) {
            PyErr_SetString(PyExc_ValueError, "internal error: indptr is empty");
            release(a, n);
        }
        return -1;
    }
    const int64_t *ip = a[0].buf.buf;
    if (ip[0] != 0 || ip[m1 - 1] < 0) {
        done(a, n, "internal error: indptr does not start at 0");
        return -1;
    }
    *nnz = ip[m1 - 1];
    return m1 - 1;
}

/* grade code of document d: int32 or int64 */
static inline int64_t code(const void *gc, int wide, int64_t d)
{
    return wide ? ((const int64_t *)gc)[d] : (int64_t)((const int32_t *)gc)[d];
}

static int check_offsets(const int64_t *off, Py_ssize_t n_off, Py_ssize_t qa, Py_ssize_t qb, Py_ssize_t m)
{
    if (qa < 0 || qb < qa || qb >= n_off) {
        PyErr_SetString(PyExc_ValueError, "internal error: query range out of the offsets");
        return -1;
    }
    for (Py_ssize_t q = qa; q < qb; q++) {
        if (off[q] < 0 || off[q + 1] < off[q] || off[q + 1] > m) {
            PyErr_SetString(PyExc_ValueError, "internal error: query offsets not increasing inside [0, m]");
            return -1;
        }
    }
    return 0;
}

/* The boundaries move forward along a query's sorted scores, a position or two per document on average.
 * Both advances test four positions at once, without branches (the failures, resp. passes, form a prefix
 * because the test is monotone along sorted scores, so their count is the step), and loop only when all
 * four moved: a scalar loop's exit is a branch the processor mispredicts about once per document. */

/* first k' >= k with k' = p or s_p - s[k'] < margin (needs margin > 0, k <= p). Never past p, even where
 * the test is not monotone or fails at p itself (a NaN or infinite score: garbage bounds, which callers
 * reject, but no overrun) */
static inline int64_t lo_advance(const double *s, int64_t k, int64_t p, double sp, double margin)
{
    for (;;) {
        if (k >= p) {
            return p;
        }
        int64_t j0 = k, j1 = k + 1 < p ? k + 1 : p, j2 = k + 2 < p ? k + 2 : p, j3 = k + 3 < p ? k + 3 : p;
        int64_t step = (int64_t)!(sp - s[j0] < margin) + (int64_t)!(sp - s[j1] < margin)
                       + (int64_t)!(sp - s[j2] < margin) + (int64_t)!(sp - s[j3] < margin);
        k += step;
        if (step < 4) {
            return k < p ? k : p;
        }
    }
}

/* first h' >= h with h' = en or !(s[h'] - s_p < margin) (needs h < en or h = en) */
static inline int64_t hi_advance(const double *s, int64_t h, int64_t en, double sp, double margin)
{
    for (;;) {
        if (h >= en) {
            return en;
        }
        int64_t last = en - 1;
        int64_t j1 = h + 1 < last ? h + 1 : last, j2 = h + 2 < last ? h + 2 : last, j3 = h + 3 < last ? h + 3 : last;
        int64_t step = (int64_t)(s[h] - sp < margin) + (int64_t)((h + 1 < en) & (s[j1] - sp < margin))
                       + (int64_t)((h + 2 < en) & (s[j2] - sp < margin)) + (int64_t)((h + 3 < en) & (s[j3] - sp < margin));
        h += step;
        if (step < 4) {
            return h;
        }
    }
}

/* bounds(s_o, offsets, qa, qb, margin, p_lo, p_hi or None)
 * p_lo[p]: first k >= start with s_p - s_k < margin; p_hi[p]: first k > p with !(s_k - s_p < margin), or end. */
static PyObject *bounds(PyObject *self, PyObject *args)
{
    PyObject *o_s, *o_off, *o_lo, *o_hi;
    Py_ssize_t qa, qb;
    double margin;
    Arr a[4];
    if (!PyArg_ParseTuple(args, "OOnndOO", &o_s, &o_off, &qa, &qb, &margin, &o_lo, &o_hi)) {
        return NULL;
    }
    Py_ssize_t m = first(o_s, a, 4, "s_o");
    if (m < 0) {
        return NULL;
    }
    if (get(o_off, &a[1], 0, 8, 1, "offsets") || get(o_lo, &a[2], 1, 8, m, "p_lo") || get(o_hi, &a[3], 1, 8, m, "?p_hi")
        || check_offsets(a[1].buf.buf, a[1].buf.len / 8, qa, qb, m)) {
        release(a, 4);
        return NULL;
    }
    const double *s = a[0].buf.buf;
    const int64_t *off = a[1].buf.buf;
    int64_t *lo = a[2].buf.buf;
    int64_t *hi = a[3].held ? a[3].buf.buf : NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = qa; q < qb; q++) {
        int64_t st = off[q], en = off[q + 1], k = st, h = st;
        for (int64_t p = st; p < en; p++) {
            double sp = s[p];
            k = lo_advance(s, k, p, sp, margin);
            lo[p] = k;
            if (hi) {
                h = hi_advance(s, h > p ? h : p + 1, en, sp, margin);
                hi[p] = h;
            }
        }
    }
    Py_END_ALLOW_THREADS
    return done(a, 4, NULL);
}

/* band_counts(s_o, offsets, qa, qb, margins, counts)
 * counts[q, j] = sum over the positions p of query q of (p_lo at margins[j]) - (p_lo at 1), with p_lo as in
 * bounds(): the pairs of positions whose score difference lies in [margins[j], 1), for several margins in one
 * pass (a pointer each). Rows qa..qb-1 of counts (n_queries x J, int64) are written. Needs 0 < margins[j]. */
static PyObject *band_counts(PyObject *self, PyObject *args)
{
    PyObject *o_s, *o_off, *o_mg, *o_cnt;
    Py_ssize_t qa, qb;
    Arr a[4];
    if (!PyArg_ParseTuple(args, "OOnnOO", &o_s, &o_off, &qa, &qb, &o_mg, &o_cnt)) {
        return NULL;
    }
    Py_ssize_t m = first(o_s, a, 4, "s_o");
    if (m < 0) {
        return NULL;
    }
    if (get(o_off, &a[1], 0, 8, 1, "offsets") || get(o_mg, &a[2], 0, 8, 1, "margins")
        || check_offsets(a[1].buf.buf, a[1].buf.len / 8, qa, qb, m)) {
        release(a, 4);
        return NULL;
    }
    Py_ssize_t J = a[2].buf.len / 8, n_q = a[1].buf.len / 8 - 1;
    if (J > 64 || get(o_cnt, &a[3], 1, 8, n_q * J, "counts")) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "internal error: at most 64 margins");
        }
        release(a, 4);
        return NULL;
    }
    const double *s = a[0].buf.buf, *mg = a[2].buf.buf;
    for (Py_ssize_t j = 0; j < J; j++) {
        if (!(mg[j] > 0.0)) {
            return done(a, 4, "internal error: margins must be positive");
        }
    }
    const int64_t *off = a[1].buf.buf;
    int64_t *cnt = a[3].buf.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = qa; q < qb; q++) {
        int64_t st = off[q], en = off[q + 1], k0 = st, k[64];
        int64_t *row = cnt + q * J;
        for (Py_ssize_t j = 0; j < J; j++) {
            k[j] = st;
            row[j] = 0;
        }
        for (int64_t p = st; p < en; p++) {
            double sp = s[p];
            k0 = lo_advance(s, k0, p, sp, 1.0);
            for (Py_ssize_t j = 0; j < J; j++) {
                k[j] = lo_advance(s, k[j], p, sp, mg[j]);
                row[j] += k[j] - k0;
            }
        }
    }
    Py_END_ALLOW_THREADS
    return done(a, 4, NULL);
}

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* violations() on query q, for G grades (called with G a constant where it is small, so the loops over
 * grades unroll); returns 1 for a document index or grade code out of range. */
static ALWAYS_INLINE int violations_query(const double *s, const int64_t *order, const void *gc, int wide,
                                          const int64_t *off, const double *flat, int64_t G, Py_ssize_t q, double margin,
                                          double *lower, double *upper, int64_t *p_lo, int64_t *table,
                                          const double *sb, int64_t *p_out, int32_t *cum, Py_ssize_t m)
{
    int64_t st = off[q], en = off[q + 1], L = en - st;
    for (int64_t g = 0; g < G; g++) {
        cum[g] = 0;
    }
    for (int64_t j = 0; j < L; j++) {
        int64_t d = order[st + j];
        int64_t g_d = (d >= 0 && d < m) ? code(gc, wide, d) : -1;
        if (g_d < 0 || g_d >= G) {
            return 1;
        }
        int32_t *row = cum + j * G;
        for (int64_t g = 0; g < G; g++) {
            row[G + g] = row[g] + (g == g_d);
        }
    }
    const double *fq = flat + q * G * G;
    const int32_t *total = cum + L * G;
    int64_t k = st, h = st, kb = st;
    for (int64_t p = st; p < en; p++) {
        double sp = s[p];
        k = lo_advance(s, k, p, sp, margin);                      /* [k, end): not beaten by p */
        h = hi_advance(s, h > p ? h : p + 1, en, sp, margin);     /* [start, h): not beating p */
        const int32_t *at_k = cum + (k - st) * G, *at_h = cum + (h - st) * G, *at_p = cum + (p - st) * G;
        int64_t gp = 0;
        for (int64_t g = 1; g < G; g++) {  /* the grade of p: the one counted between p and p + 1 */
            gp += g * (int64_t)(at_p[G + g] - at_p[g]);
        }
        double lw = 0.0, up = 0.0;
        for (int64_t g = 0; g < G - 1; g++) {  /* worse partners at [p_lo, end) */
            int64_t n = (int64_t)total[g] - (int64_t)at_k[g];
            lw += fq[gp * G + g] * (double)n;
            if (table && g < gp) {
                table[q * G * G + gp * G + g] += n;
            }
        }
        for (int64_t g = 1; g < G; g++) {  /* better partners at [start, p_hi) */
            up += fq[g * G + gp] * (double)at_h[g];
        }
        lower[p] = lw;
        upper[p] = up;
        if (p_lo) {
            p_lo[p] = k;
        }
        if (sb) {
            kb = lo_advance(sb, kb, p, sb[p], margin);
            p_out[p] = kb < k ? kb : k;
        }
    }
    return 0;
}

/* violations(s_o, order, gc, offsets, flat, G, qa, qb, margin, lower, upper, p_lo, table, s_b, p_out)
 * One pass per query with two pointers and running counts per grade:
 *   p_lo[p] = first k >= start with s_p - s_k < margin, p_hi[p] = first k > p with !(s_k - s_p < margin) (or end),
 *   lower[p] = sum_{g < G-1} flat[q,g_p,g] #{k in [p_lo, end) : g_k = g}   (g_p the grade of position p),
 *   upper[p] = sum_{g > 0}   flat[q,g,g_p] #{k in [start, p_hi) : g_k = g},
 *   table[q, g_p, g] += #{k in [p_lo, end) : g_k = g} for g < g_p   (table may be None),
 *   p_out[p] = min(p_lo[p], first k >= start with s_b[p] - s_b[k] < margin)   (s_b, p_out may be None).
 * The counts are those of the numpy path's prefix sums and the terms are added in the same order of g, so
 * lower and upper are equal to its bit for bit. p_lo may be None. */
static PyObject *violations(PyObject *self, PyObject *args)
{
    PyObject *o[11];
    Py_ssize_t G, qa, qb;
    double margin;
    Arr a[11];
    if (!PyArg_ParseTuple(args, "OOOOOnnndOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &G, &qa, &qb, &margin,
                          &o[5], &o[6], &o[7], &o[8], &o[9], &o[10])) {
        return NULL;
    }
    Py_ssize_t m = first(o[0], a, 11, "s_o");
    if (m < 0) {
        return NULL;
    }
    int wide;
    if (G < 1 || G > 64 || get(o[1], &a[1], 0, 8, m, "order") || get_codes(o[2], &a[2], m, &wide)
        || get(o[3], &a[3], 0, 8, 1, "offsets") || get(o[4], &a[4], 0, 8, 0, "flat")
        || get(o[5], &a[5], 1, 8, m, "lower") || get(o[6], &a[6], 1, 8, m, "upper")
        || get(o[7], &a[7], 1, 8, m, "?p_lo") || get(o[9], &a[9], 0, 8, m, "?s_b")
        || get(o[10], &a[10], 1, 8, m, "?p_out")) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "internal error: 1 <= G <= 64 grades");
        }
        release(a, 11);
        return NULL;
    }
    Py_ssize_t n_off = a[3].buf.len / 8;
    Py_ssize_t n_cells = (n_off - 1) * G * G;
    if (check_offsets(a[3].buf.buf, n_off, qa, qb, m) || get(o[8], &a[8], 1, 8, n_cells, "?table")) {
        release(a, 11);
        return NULL;
    }
    if (a[4].buf.len / 8 < n_cells || (a[9].held != a[10].held)) {
        PyErr_SetString(PyExc_ValueError, "internal error: flat has fewer than n_queries G^2 entries, or only one "
                        "of s_b and p_out was given");
        release(a, 11);
        return NULL;
    }
    const double *s = a[0].buf.buf, *flat = a[4].buf.buf, *sb = a[9].held ? a[9].buf.buf : NULL;
    const int64_t *order = a[1].buf.buf, *off = a[3].buf.buf;
    const void *gc = a[2].buf.buf;
    double *lower = a[5].buf.buf, *upper = a[6].buf.buf;
    int64_t *p_lo = a[7].held ? a[7].buf.buf : NULL, *table = a[8].held ? a[8].buf.buf : NULL;
    int64_t *p_out = a[10].held ? a[10].buf.buf : NULL;
    int64_t longest = 1;
    for (Py_ssize_t q = qa; q < qb; q++) {
        if (off[q + 1] - off[q] > longest) {
            longest = off[q + 1] - off[q];
        }
    }
    /* cum[j G + g]: documents of grade g among the first j of the query, in sorted order (int32: m < 2^31) */
    int32_t *cum = malloc(sizeof(int32_t) * (size_t)(longest + 1) * (size_t)G);
    if (!cum) {
        release(a, 11);
        return PyErr_NoMemory();
    }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = qa; q < qb && !bad; q++) {
#define SWEEP(GG) violations_query(s, order, gc, wide, off, flat, GG, q, margin, lower, upper, p_lo, table, sb, p_out, cum, m)
        switch (G) {
        case 2: bad = SWEEP(2); break;
        case 3: bad = SWEEP(3); break;
        case 4: bad = SWEEP(4); break;
        case 5: bad = SWEEP(5); break;
        default: bad = SWEEP(G);
        }
#undef SWEEP
    }
    Py_END_ALLOW_THREADS
    free(cum);
    return done(a, 11, bad ? "internal error: a document index or grade code out of range" : NULL);
}

/* band(order, gc, offsets, p_out, p_in, flat, G, qa, qb, start, better, worse, weight) -> count
 * The pairs (better at sorted p, worse at [p_out[p], p_in[p])) of lower grade and positive weight,
 * as document indices, written from index `start` of the outputs; returns the index after the last. */
static PyObject *band(PyObject *self, PyObject *args)
{
    PyObject *o[9];
    Py_ssize_t G, qa, qb, at;
    Arr a[9];
    if (!PyArg_ParseTuple(args, "OOOOOOnnnnOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &G, &qa, &qb, &at,
                          &o[6], &o[7], &o[8])) {
        return NULL;
    }
    Py_ssize_t m = first(o[0], a, 9, "order");
    if (m < 0) {
        return NULL;
    }
    int wide;
    if (G < 1 || get_codes(o[1], &a[1], m, &wide) || get(o[2], &a[2], 0, 8, 1, "offsets")
        || get(o[3], &a[3], 0, 8, m, "p_out") || get(o[4], &a[4], 0, 8, m, "p_in")
        || get(o[5], &a[5], 0, 8, 0, "flat") || get(o[6], &a[6], 1, 8, 0, "better")
        || get(o[7], &a[7], 1, 8, 0, "worse") || get(o[8], &a[8], 1, 8, 0, "weight")) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "internal error: G >= 1 grades");
        }
        release(a, 9);
        return NULL;
    }
    Py_ssize_t n_off = a[2].buf.len / 8;
    if (check_offsets(a[2].buf.buf, n_off, qa, qb, m)) {
        release(a, 9);
        return NULL;
    }
    Py_ssize_t cap = a[6].buf.len / 8;
    if (a[7].buf.len / 8 < cap) {
        cap = a[7].buf.len / 8;
    }
    if (a[8].buf.len / 8 < cap) {
        cap = a[8].buf.len / 8;
    }
    if (a[5].buf.len / 8 < (n_off - 1) * G * G || at < 0) {
        PyErr_SetString(PyExc_ValueError, "internal error: flat has fewer than n_queries G^2 entries");
        release(a, 9);
        return NULL;
    }
    const int64_t *order = a[0].buf.buf, *off = a[2].buf.buf, *p_out = a[3].buf.buf, *p_in = a[4].buf.buf;
    const void *gc = a[1].buf.buf;
    const double *flat = a[5].buf.buf;
    int64_t *better = a[6].buf.buf, *worse = a[7].buf.buf;
    double *weight = a[8].buf.buf;
    Py_ssize_t n = at;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = qa; q < qb && !bad; q++) {
        int64_t st = off[q], en = off[q + 1];
        const double *fq = flat + q * G * G;
        for (int64_t p = st; p < en && !bad; p++) {
            int64_t b = order[p], lo = p_out[p], hi = p_in[p];
            if (b < 0 || b >= m || lo < st || hi > en || lo > hi) {
                bad = 1;
                break;
            }
            int64_t gb = code(gc, wide, b);
            for (int64_t k = lo; k < hi; k++) {
                int64_t d = order[k];
                if (d < 0 || d >= m) {
                    bad = 1;
                    break;
                }
                int64_t gd = code(gc, wide, d);
                if (gd < gb && gb < G && gd >= 0) {
                    double c = fq[gb * G + gd];
                    if (c > 0.0) {
                        if (n >= cap) {
                            bad = 2;
                            break;
                        }
                        better[n] = b;
                        worse[n] = d;
                        weight[n] = c;
                        n++;
                    }
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    release(a, 9);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad == 2 ? "internal error: more band pairs than the outputs hold"
                                                   : "internal error: a document or boundary out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(n);
}

/* pair_rows(X, n, better, worse, scale, out): out[i, :] = (X[better_i, :] - X[worse_i, :]) * scale_i
 * for a C-contiguous float64 X of n columns; the same two operations per entry as numpy's
 * (X[better] - X[worse]) * scale[:, None], so the same values bit for bit. */
static PyObject *pair_rows(PyObject *self, PyObject *args)
{
    PyObject *o_x, *o_b, *o_w, *o_sc, *o_out;
    Py_ssize_t n;
    Arr a[5];
    if (!PyArg_ParseTuple(args, "OnOOOO", &o_x, &n, &o_b, &o_w, &o_sc, &o_out)) {
        return NULL;
    }
    memset(a, 0, sizeof(a));
    if (n < 1 || get(o_x, &a[0], 0, 8, 0, "X") || get(o_b, &a[1], 0, 8, 0, "better")) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "internal error: n < 1");
        }
        release(a, 5);
        return NULL;
    }
    Py_ssize_t rows = a[0].buf.len / 8 / n, k = a[1].buf.len / 8;
    if (get(o_w, &a[2], 0, 8, k, "worse") || get(o_sc, &a[3], 0, 8, k, "scale") || get(o_out, &a[4], 1, 8, k * n, "out")) {
        release(a, 5);
        return NULL;
    }
    const double *X = a[0].buf.buf, *sc = a[3].buf.buf;
    const int64_t *b = a[1].buf.buf, *w = a[2].buf.buf;
    double *out = a[4].buf.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < k; i++) {
        if (b[i] < 0 || b[i] >= rows || w[i] < 0 || w[i] >= rows) {
            bad = 1;
            break;
        }
        const double *xb = X + b[i] * n, *xw = X + w[i] * n;
        double *o = out + i * n, f = sc[i];
        for (Py_ssize_t j = 0; j < n; j++) {
            o[j] = (xb[j] - xw[j]) * f;
        }
    }
    Py_END_ALLOW_THREADS
    return done(a, 5, bad ? "internal error: a row index out of range" : NULL);
}

/* resort(s, prev, offsets, qa, qb, out, max_moves) -> bool
 * out[start:end] = prev[start:end] sorted by s (stable) for every query, by insertion; False (out
 * unspecified) when that would take more than max_moves moves. */
static PyObject *resort(PyObject *self, PyObject *args)
{
    PyObject *o_s, *o_prev, *o_off, *o_out;
    Py_ssize_t qa, qb, max_moves;
    Arr a[4];
    if (!PyArg_ParseTuple(args, "OOOnnOn", &o_s, &o_prev, &o_off, &qa, &qb, &o_out, &max_moves)) {
        return NULL;
    }
    Py_ssize_t m = first(o_s, a, 4, "s");
    if (m < 0) {
        return NULL;
    }
    if (get(o_prev, &a[1], 0, 8, m, "prev") || get(o_off, &a[2], 0, 8, 1, "offsets")
        || get(o_out, &a[3], 1, 8, m, "out") || check_offsets(a[2].buf.buf, a[2].buf.len / 8, qa, qb, m)) {
        release(a, 4);
        return NULL;
    }
    const double *s = a[0].buf.buf;
    const int64_t *prev = a[1].buf.buf, *off = a[2].buf.buf;
    int64_t *out = a[3].buf.buf;
    Py_ssize_t moves = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = qa; q < qb && !bad && moves <= max_moves; q++) {
        int64_t st = off[q], en = off[q + 1];
        for (int64_t i = st; i < en; i++) {
            int64_t x = prev[i];
            if (x < 0 || x >= m) {
                bad = 1;
                break;
            }
            double v = s[x];
            int64_t j = i;
            while (j > st && s[out[j - 1]] > v) {
                out[j] = out[j - 1];
                j--;
            }
            out[j] = x;
            moves += i - j;
            if (moves > max_moves) {
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS
    release(a, 4);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "internal error: a document index out of range");
        return NULL;
    }
    return PyBool_FromLong(moves <= max_moves);
}

/* smoothed_groups(s, order, doc, a, G, L, delta, inner, out_doc, out_a, out_x, lo, hi, lo_in, hi_in, a_band,
 *                 t_loss, t_smooth, t_asum, t_asq, t_inner, part) -> band
 * The Huber-smoothed hinge of cvxrank.native.document_oracle on G groups of L members (row-major, flat): row r's
 * members sorted by score are order[r*L .. r*L+L-1] (flat positions into doc and a, from a stable argsort); the
 * sorted documents, weights and shifted scores x = S - S[0], the boundaries at the margins 1 (lo, hi) and inner
 * = 1 - delta (lo_in, hi_in), as in bounds(), and every per-member term of DocumentOracle.smoothed_scores with the
 * numpy path's operations in its order (prefix sums along the row added in turn, as numpy's cumsum): the sums of
 * the terms are left to numpy, so both paths give the same bits. Returns the band's pair count (group form). */
static PyObject *smoothed_groups(PyObject *self, PyObject *args)
{
    enum { N = 18 };
    PyObject *o[N];
    Py_ssize_t G, L;
    double delta, inner;
    Arr a[N];
    if (!PyArg_ParseTuple(args, "OOOOnnddOOOOOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &G, &L, &delta, &inner, &o[4],
                          &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15],
                          &o[16], &o[17])) {
        return NULL;
    }
    Py_ssize_t m = first(o[0], a, N, "s");
    if (m < 0) {
        return NULL;
    }
    if (G < 0 || L < 1 || !(delta > 0.0) || !(inner > 0.0)) {
        return done(a, N, "internal error: bad group shape or margins");
    }
    Py_ssize_t K = G * L;
    static const char *names[] = {"order", "doc", "a", "out_doc", "out_a", "out_x", "lo", "hi", "lo_in", "hi_in",
                                  "a_band", "t_loss", "t_smooth", "t_asum", "t_asq", "t_inner", "part"};
    for (int i = 1; i < 18; i++) {
        int writable = i >= 4;
        if (get(o[i], &a[i], writable, 8, K, names[i - 1])) {
            release(a, N);
            return NULL;
        }
    }
    const double *s = a[0].buf.buf;
    const int64_t *order = a[1].buf.buf, *doc = a[2].buf.buf;
    const double *w = a[3].buf.buf;
    int64_t *sdoc = a[4].buf.buf;
    double *sa = a[5].buf.buf, *sx = a[6].buf.buf;
    int64_t *lo = a[7].buf.buf, *hi = a[8].buf.buf, *lo_in = a[9].buf.buf, *hi_in = a[10].buf.buf;
    double *a_band = a[11].buf.buf, *t_loss = a[12].buf.buf, *t_smooth = a[13].buf.buf, *t_asum = a[14].buf.buf;
    double *t_asq = a[15].buf.buf, *t_inner = a[16].buf.buf, *part = a[17].buf.buf;
    double *buf = malloc(sizeof(double) * (size_t)(5 * L + 4));
    if (!buf) {
        release(a, N);
        return PyErr_NoMemory();
    }
    double *S = buf, *cx = buf + L, *cxx = cx + L + 1, *ca = cxx + L + 1, *cax = ca + L + 1;
    const double hd = 0.5 * delta, twod = 2.0 * delta, dd = delta * delta;
    int64_t band = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < G && !bad; r++) {
        Py_ssize_t base = r * L;
        for (Py_ssize_t k = 0; k < L; k++) {
            int64_t f = order[base + k];
            if (f < base || f >= base + L || doc[f] < 0 || doc[f] >= m) {
                bad = 1;
                break;
            }
            sdoc[base + k] = doc[f];
            sa[base + k] = w[f];
            S[k] = s[doc[f]];
        }
        if (bad) {
            break;
        }
        const double *ar = sa + base;
        double *x = sx + base;
        cx[0] = cxx[0] = ca[0] = cax[0] = 0.0;
        for (Py_ssize_t k = 0; k < L; k++) {
            x[k] = S[k] - S[0];
            cx[k + 1] = cx[k] + x[k];
            cxx[k + 1] = cxx[k] + x[k] * x[k];
            ca[k + 1] = ca[k] + ar[k];
            cax[k + 1] = cax[k] + ar[k] * x[k];
        }
        int64_t k1 = 0, h1 = 0, k2 = 0, h2 = 0;
        for (int64_t p = 0; p < L; p++) {
            double sp = S[p];
            k1 = lo_advance(S, k1, p, sp, 1.0);
            h1 = hi_advance(S, h1 > p ? h1 : p + 1, L, sp, 1.0);
            k2 = lo_advance(S, k2, p, sp, inner);
            h2 = hi_advance(S, h2 > p ? h2 : p + 1, L, sp, inner);
            Py_ssize_t i = base + p;
            lo[i] = k1;
            hi[i] = h1;
            lo_in[i] = k2;
            hi_in[i] = h2;
            double xp = x[p], ap = ar[p], d = 1.0 - xp;
            double nV = (double)(L - k2 - 1), nB = (double)(k2 - k1);
            double rV = nV * d + ((cx[L] - cx[k2]) - xp);
            double SB1 = (cx[L] - cx[k1]) - (cx[L] - cx[k2]);
            double SB2 = (cxx[L] - cxx[k1]) - (cxx[L] - cxx[k2]);
            double rB = nB * d + SB1;
            double rB2 = nB * d * d + 2.0 * d * SB1 + SB2;
            t_loss[i] = ap * (rV + rB);
            t_smooth[i] = ap * (rV - hd * nV + rB2 / twod);
            t_asum[i] = ap * (nV + rB / delta);
            t_asq[i] = ap * (nV + rB2 / dd);
            t_inner[i] = ap * nV;
            if (ap > 0) {
                band += k2 - k1;
            }
            double a_hi = ca[h1];
            double a_in = ca[h2] - ap;
            a_band[i] = a_hi - ca[h2];
            double ax_band = cax[h1] - cax[h2];
            double worse = a_in + ((1.0 + xp) * a_band[i] - ax_band) / delta;
            part[i] = t_asum[i] - worse;
        }
    }
    Py_END_ALLOW_THREADS
    free(buf);
    release(a, N);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "internal error: an order or document index out of range");
        return NULL;
    }
    return PyLong_FromLongLong((long long)band);
}

/* The pairs of pair_cd, pair_sums and pair_margin_sums, by query: block q holds the pairs blocks[q]..blocks[q+1]-1,
 * pair i of it the documents docs[starts[q] + lb[i]] (better) and docs[starts[q] + lw[i]] (worse), lb and lw local
 * indices (uint16 when every query has at most 65,536 documents, else int32): 4 bytes a pair instead of 8. */
typedef struct {
    const int32_t *docs;
    const int64_t *starts, *blocks;
    void *lb, *lw;
    int wide;
    Py_ssize_t Q, P, m;
} Pairs;

static inline int64_t local_at(const void *a, int wide, int64_t i)
{
    return wide ? (int64_t)((const int32_t *)a)[i] : (int64_t)((const uint16_t *)a)[i];
}

static inline int64_t better_of(const Pairs *p, int64_t q, int64_t i)
{
    return p->docs[p->starts[q] + local_at(p->lb, p->wide, i)];
}

static inline int64_t worse_of(const Pairs *p, int64_t q, int64_t i)
{
    return p->docs[p->starts[q] + local_at(p->lw, p->wide, i)];
}

static inline void swap_pair(Pairs *p, double *al, int64_t i, int64_t j)
{
    if (p->wide) {
        int32_t *b = p->lb, *w = p->lw, t = b[i];
        b[i] = b[j];
        b[j] = t;
        t = w[i];
        w[i] = w[j];
        w[j] = t;
    }
    else {
        uint16_t *b = p->lb, *w = p->lw, t = b[i];
        b[i] = b[j];
        b[j] = t;
        t = w[i];
        w[i] = w[j];
        w[j] = t;
    }
    double u = al[i];
    al[i] = al[j];
    al[j] = u;
}

/* Take the five arrays of the pairs into a[0..4] (lb, lw writable when asked) and check them against m
 * documents: 0 or -1 with the error set (the caller releases a). */
static int get_pairs(PyObject **o, Arr *a, int writable, Py_ssize_t m, Pairs *p)
{
    if (get(o[0], &a[0], 0, 4, m, "docs") || get(o[1], &a[1], 0, 8, 0, "starts")) {
        return -1;
    }
    p->Q = a[1].buf.len / 8;
    if (get(o[2], &a[2], 0, 8, p->Q + 1, "blocks")) {
        return -1;
    }
    if (PyObject_GetBuffer(o[3], &a[3].buf, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    a[3].held = 1;
    Py_ssize_t size = a[3].buf.itemsize;
    if (size != 2 && size != 4) {
        PyErr_SetString(PyExc_ValueError, "internal error: local pair indices must be uint16 or int32");
        return -1;
    }
    p->P = a[3].buf.len / size;
    if (get(o[4], &a[4], writable, size, p->P, "lw")) {
        return -1;
    }
    p->docs = a[0].buf.buf;
    p->starts = a[1].buf.buf;
    p->blocks = a[2].buf.buf;
    p->lb = a[3].buf.buf;
    p->lw = a[4].buf.buf;
    p->wide = size == 4;
    p->m = m;
    if (p->blocks[0] != 0 || p->blocks[p->Q] != p->P) {
        PyErr_SetString(PyExc_ValueError, "internal error: the blocks do not cover the pairs");
        return -1;
    }
    for (Py_ssize_t d = 0; d < m; d++) {
        if (p->docs[d] < 0 || p->docs[d] >= m) {
            PyErr_SetString(PyExc_ValueError, "internal error: a document out of range");
            return -1;
        }
    }
    for (Py_ssize_t q = 0; q < p->Q; q++) {
        int64_t st = p->starts[q];
        if (p->blocks[q + 1] < p->blocks[q] || st < 0 || st > m) {
            PyErr_SetString(PyExc_ValueError, "internal error: blocks decrease or a start is out of range");
            return -1;
        }
        for (int64_t i = p->blocks[q]; i < p->blocks[q + 1]; i++) {
            int64_t lb = local_at(p->lb, p->wide, i), lw = local_at(p->lw, p->wide, i);
            if (lb < 0 || lw < 0 || st + lb >= m || st + lw >= m) {
                PyErr_SetString(PyExc_ValueError, "internal error: a pair out of range");
                return -1;
            }
        }
    }
    return 0;
}

/* pair_cd(indptr, indices, data, sqnorm, docs, starts, blocks, lb, lw, cell, grade, table, alpha, w, lam, passes,
 *         state, eps[, active, limits[, codes]]) -> passes done
 * Dual coordinate descent (Hsieh et al. 2008) on the dual of (9) over the pairs (Pairs above), for a CSR X (int64
 * indptr, int32 indices, float64 data; sqnorm the squared norms of its rows, so each index at most once a row):
 *   max_{0 <= alpha_i <= c_i} sum_i alpha_i - lam ||w||^2,  w = sum_i alpha_i (x_better_i - x_worse_i) / (2 lam),
 * one coordinate at a time, exactly: alpha_i <- clip(alpha_i - (m_i - 1) 2 lam / ||d_i||^2, 0, c_i) with the margin
 * m_i = <w, d_i>, and w updated on the two rows' entries; c_i = table[cell[better_i] + grade[worse_i]]. A pass
 * permutes each query's active pairs at random (in place inside their block, with their alpha; the generator's
 * state in state[0]) and visits them in rounds: a burst of pairs of each query in turn (burst_of), the queries in
 * a random order. It shrinks, as Hsieh et al., a pair at a bound whose gradient points out of the box by more than
 * the last pass's extreme projected gradients (to the end of its block); when the active pairs' projected
 * gradients span at most eps, the shrunk pairs come back, and the run stops if none had been shrunk. With active
 * (int64, one count a query) and limits (float64, 2), the shrinking carries over between calls: a call starts from
 * the counts of active pairs and the two thresholds there (none shrunk while active[0] < 0) and writes back its
 * own, so that a caller that looks at the bounds every few passes does not visit every pair again after each look.
 * With codes (uint8, 2 bits a pair: code_of; zeros at first, kept by the caller and permuted with the pairs), the
 * dot product <x_better, x_worse> of an update is formed only while the pair's rows are not known to meet on no
 * non-zero entry: on sparse rows most pairs never do, and their ||d_i||^2 is then ||x_b||^2 + ||x_w||^2 exactly as
 * before (the same steps, bit for bit). */
static inline double row_dot(const int64_t *ip, const int32_t *ind, const double *val, int64_t r, const double *w)
{
    double s = 0.0;
    for (int64_t k = ip[r]; k < ip[r + 1]; k++) {
        s += val[k] * w[ind[k]];
    }
    return s;
}

/* <x_a, x_b> by way of a dense scratch vector of zeros (n entries, zeros again on return): row a scattered into it,
 * row b gathered from it, row a cleared: independent loads and stores, where a merge of the two sorted index lists
 * is one chain of dependent comparisons (on the sparse shape of the benchmark, the passes of pair_cd took 1.4x the
 * time with a merge without branches, 2x with one that branched). Repeated indices in a row are summed. *met is set
 * to 1 when a product was not zero (or NaN: data not finite); else every product was +-0 and the sum is +0.0
 * exactly. */
static inline double rows_dot(const int64_t *ip, const int32_t *ind, const double *val, int64_t a, int64_t b,
                              double *scratch, int *met)
{
    for (int64_t k = ip[a]; k < ip[a + 1]; k++) {
        scratch[ind[k]] += val[k];
    }
    double s = 0.0;
    int any = 0;
    for (int64_t k = ip[b]; k < ip[b + 1]; k++) {
        double p = val[k] * scratch[ind[k]];
        any |= !(p == 0.0);
        s += p;
    }
    for (int64_t k = ip[a]; k < ip[a + 1]; k++) {
        scratch[ind[k]] = 0.0;
    }
    *met = any;
    return s;
}

/* The 2-bit code of pair i in pair_cd's codes: 0 not yet known, 1 every term of its two rows' dot product is zero
 * (the rows meet on no entry non-zero in both: the dot product is +0.0 and need not be formed again), 2 not. */
static inline int code_of(const uint8_t *codes, int64_t i)
{
    return (codes[i >> 2] >> ((i & 3) * 2)) & 3;
}

static inline void set_code(uint8_t *codes, int64_t i, int c)
{
    int shift = (int)(i & 3) * 2;
    codes[i >> 2] = (uint8_t)((codes[i >> 2] & ~(3 << shift)) | (c << shift));
}

/* swap_pair for the codes as well (when there are codes) */
static inline void swap_coded(Pairs *p, double *al, uint8_t *codes, int64_t i, int64_t j)
{
    swap_pair(p, al, i, j);
    if (codes) {
        int c = code_of(codes, i);
        set_code(codes, i, code_of(codes, j));
        set_code(codes, j, c);
    }
}

static inline uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Pairs of one query visited in a row by pair_cd before the next query's: a sixteenth of its active pairs, at least
 * PAIR_BURST and at most PAIR_BURST_MAX. Fewer than 8 in a row cost passes in the time of one pass in the stored
 * order, a query's pairs all in a row 3x the passes (and 32 in a row, on queries of 8-14 documents, no convergence
 * in 10,000 passes); where a query has thousands of active pairs, 64 of them in a row keep its rows in cache: on
 * the sparse shape of the benchmark 0.84x the time of bursts of 8 in the same passes (docs/native-measurements.md). */
#ifndef PAIR_BURST
#define PAIR_BURST 8
#endif
#ifndef PAIR_BURST_MAX
#define PAIR_BURST_MAX 64
#endif
#if PAIR_BURST < 1 || PAIR_BURST > PAIR_BURST_MAX
#error "PAIR_BURST must be at least 1 and at most PAIR_BURST_MAX"
#endif

static inline int64_t burst_of(int64_t active)
{
    int64_t k = active >> 4;
    return k < PAIR_BURST ? PAIR_BURST : (k > PAIR_BURST_MAX ? PAIR_BURST_MAX : k);
}

static PyObject *pair_cd(PyObject *self, PyObject *args)
{
    PyObject *o[18];
    double lam, eps;
    Py_ssize_t passes;
    Arr a[18];
    o[15] = o[16] = o[17] = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOdnOd|OOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &lam, &passes, &o[14], &eps, &o[15], &o[16],
                          &o[17])) {
        return NULL;
    }
    Py_ssize_t nnz;
    Py_ssize_t m = get_indptr(o[0], a, 18, &nnz);
    if (m < 0) {
        return NULL;
    }
    const int64_t *ip = a[0].buf.buf;
    Pairs pr;
    if (get(o[1], &a[1], 0, 4, nnz, "indices") || get(o[2], &a[2], 0, 8, nnz, "data") ||
        get(o[3], &a[3], 0, 8, m, "sqnorm") || get_pairs(o + 4, a + 4, 1, m, &pr)) {
        release(a, 18);
        return NULL;
    }
    Py_ssize_t P = pr.P, Q = pr.Q;
    if (get(o[9], &a[9], 0, 8, m, "cell") || get(o[10], &a[10], 0, 8, m, "grade") ||
        get(o[11], &a[11], 0, 8, 1, "table") || get(o[12], &a[12], 1, 8, P, "alpha") ||
        get(o[13], &a[13], 1, 8, 1, "w") || get(o[14], &a[14], 1, 8, 1, "state") ||
        get(o[15], &a[15], 1, 8, Q, "?active") || get(o[16], &a[16], 1, 8, 2, "?limits") ||
        get(o[17], &a[17], 1, 1, (P + 3) / 4, "?codes") || a[15].held != a[16].held) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "internal error: active and limits go together");
        }
        release(a, 18);
        return NULL;
    }
    const int32_t *ind = a[1].buf.buf;
    const double *val = a[2].buf.buf, *sq = a[3].buf.buf, *tab = a[11].buf.buf;
    const int64_t *cell = a[9].buf.buf, *grade = a[10].buf.buf;
    double *al = a[12].buf.buf, *w = a[13].buf.buf;
    uint64_t *state = a[14].buf.buf;
    Py_ssize_t n = a[13].buf.len / 8, n_tab = a[11].buf.len / 8;
    if (!(lam > 0) || passes < 0) {
        return done(a, 18, "internal error: lam must be positive and passes non-negative");
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        if (ip[k + 1] < ip[k]) {
            return done(a, 18, "internal error: indptr decreases");
        }
    }
    for (Py_ssize_t k = 0; k < nnz; k++) {
        if (ind[k] < 0 || ind[k] >= n) {
            return done(a, 18, "internal error: a column index out of range");
        }
    }
    for (Py_ssize_t d = 0; d < m; d++) {
        if (cell[d] < 0 || grade[d] < 0) {
            return done(a, 18, "internal error: a negative cell or grade");
        }
    }
    for (Py_ssize_t q = 0; q < Q; q++) {
        for (int64_t i = pr.blocks[q]; i < pr.blocks[q + 1]; i++) {
            if (cell[better_of(&pr, q, i)] + grade[worse_of(&pr, q, i)] >= n_tab || !(al[i] >= 0)) {
                return done(a, 18, "internal error: a pair's cell out of the table or a negative alpha");
            }
        }
    }
    int64_t *kept_active = a[15].held ? a[15].buf.buf : NULL;
    double *limits = a[16].held ? a[16].buf.buf : NULL;
    uint8_t *codes = a[17].held ? a[17].buf.buf : NULL;
    if (kept_active && Q > 0 && kept_active[0] >= 0) {
        for (Py_ssize_t q = 0; q < Q; q++) {
            if (kept_active[q] < 0 || kept_active[q] > pr.blocks[q + 1] - pr.blocks[q]) {
                return done(a, 18, "internal error: an active count out of its block");
            }
        }
    }
    /* per query: its active pairs, its place in the pass's order, the next pair of its block; the live queries */
    int64_t *act = malloc(sizeof(int64_t) * (size_t)(4 * Q + 1));
    double *scratch = calloc((size_t)n + 1, sizeof(double)); /* zeros: rows_dot's */
    if (!act || !scratch) {
        free(act);
        free(scratch);
        release(a, 18);
        return PyErr_NoMemory();
    }
    int64_t *perm = act + Q, *cursor = act + 2 * Q, *list = act + 3 * Q;
    if (*state == 0) {
        *state = 88172645463325252ULL;
    }
    Py_ssize_t done_passes = 0;
    Py_BEGIN_ALLOW_THREADS
    double two_lam = 2.0 * lam, pg_max_old = INFINITY, pg_min_old = -INFINITY;
    int64_t active = P;
    for (int64_t q = 0; q < Q; q++) {
        act[q] = pr.blocks[q + 1] - pr.blocks[q];
        perm[q] = q;
    }
    if (kept_active && Q > 0 && kept_active[0] >= 0) { /* the last call's shrinking goes on (its pairs are at block ends) */
        active = 0;
        for (int64_t q = 0; q < Q; q++) {
            act[q] = kept_active[q];
            active += act[q];
        }
        pg_max_old = limits[0];
        pg_min_old = limits[1];
    }
    for (Py_ssize_t p = 0; p < passes; p++) {
        done_passes = p + 1;
        for (int64_t i = 0; i + 1 < Q; i++) { /* Fisher-Yates over the queries */
            int64_t j = i + (int64_t)(xorshift(state) % (uint64_t)(Q - i)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        int64_t live = 0; /* the queries with pairs left this pass, in the pass's order: list[0 .. live) */
        for (int64_t r = 0; r < Q; r++) {
            int64_t q = perm[r], base = pr.blocks[q];
            for (int64_t i = 0; i + 1 < act[q]; i++) { /* Fisher-Yates over the active pairs of each query */
                int64_t j = i + (int64_t)(xorshift(state) % (uint64_t)(act[q] - i));
                swap_coded(&pr, al, codes, base + i, base + j);
            }
            cursor[q] = 0;
            if (act[q] > 0) {
                list[live++] = q;
            }
        }
        double pg_max = -INFINITY, pg_min = INFINITY;
        while (live > 0) { /* rounds: the next burst of pairs of each query in turn, so that updates in a row are
                            * of different queries (a query's pairs one after another took 3x the passes) */
            int64_t kept = 0;
            for (int64_t r = 0; r < live; r++) {
                int64_t q = list[r], base = pr.blocks[q];
                for (int64_t burst = 0, lim = burst_of(act[q]); burst < lim && cursor[q] < act[q]; burst++) {
                    int64_t s = base + cursor[q];
                    int64_t b = better_of(&pr, q, s), v = worse_of(&pr, q, s);
                    double c = tab[cell[b] + grade[v]];
                    double g = row_dot(ip, ind, val, b, w) - row_dot(ip, ind, val, v, w) - 1.0; /* m_i - 1 */
                    double pg = 0.0;
                    int shrink = 0;
                    if (al[s] <= 0.0) {
                        shrink = g > pg_max_old; /* at 0 and pushed down */
                        if (g < 0.0) {
                            pg = g;
                        }
                    }
                    else if (al[s] >= c) {
                        shrink = g < pg_min_old; /* at c and pushed up */
                        if (g > 0.0) {
                            pg = g;
                        }
                    }
                    else {
                        pg = g;
                    }
                    if (shrink) { /* to the end of its block; the pair moved here is visited next round */
                        act[q]--;
                        active--;
                        swap_coded(&pr, al, codes, s, base + act[q]);
                    }
                    else {
                        cursor[q]++;
                        if (pg > pg_max) {
                            pg_max = pg;
                        }
                        if (pg < pg_min) {
                            pg_min = pg;
                        }
                        if (pg != 0.0) {
                            double dot = 0.0; /* code 1: the rows meet on no non-zero entry, the dot is +0.0 */
                            int known = codes ? code_of(codes, s) : 0;
                            if (known != 1) {
                                int met;
                                dot = rows_dot(ip, ind, val, b, v, scratch, &met);
                                if (codes && !known) {
                                    set_code(codes, s, met ? 2 : 1);
                                }
                            }
                            double qq = sq[b] + sq[v] - 2.0 * dot;
                            if (qq > 0.0) { /* else two equal rows: the pair's margin is 0 whatever w */
                                double next = al[s] - g * two_lam / qq;
                                next = next < 0.0 ? 0.0 : (next > c ? c : next);
                                double step = (next - al[s]) / two_lam;
                                if (step != 0.0) {
                                    al[s] = next;
                                    for (int64_t k = ip[b]; k < ip[b + 1]; k++) {
                                        w[ind[k]] += step * val[k];
                                    }
                                    for (int64_t k = ip[v]; k < ip[v + 1]; k++) {
                                        w[ind[k]] -= step * val[k];
                                    }
                                }
                            }
                        }
                    }
                }
                if (cursor[q] < act[q]) {
                    list[kept++] = q;
                }
            }
            live = kept;
        }
        if (pg_max - pg_min <= eps) {
            if (active == P) {
                break;
            }
            active = P; /* the shrunk pairs back, for a check over all of them */
            for (int64_t q = 0; q < Q; q++) {
                act[q] = pr.blocks[q + 1] - pr.blocks[q];
            }
            pg_max_old = INFINITY;
            pg_min_old = -INFINITY;
            continue;
        }
        pg_max_old = pg_max <= 0.0 ? INFINITY : pg_max;
        pg_min_old = pg_min >= 0.0 ? -INFINITY : pg_min;
    }
    if (kept_active) {
        for (int64_t q = 0; q < Q; q++) {
            kept_active[q] = act[q];
        }
        limits[0] = pg_max_old;
        limits[1] = pg_min_old;
    }
    Py_END_ALLOW_THREADS
    free(act);
    free(scratch);
    release(a, 18);
    return PyLong_FromSsize_t(done_passes);
}

/* pair_sums(docs, starts, blocks, lb, lw, alpha, v, V): v[d] = sum of alpha over the pairs with better = d minus the
 * sum over those with worse = d, V[d] the sum over both (alpha >= 0); one pass over the pairs (Pairs above). */
static PyObject *pair_sums(PyObject *self, PyObject *args)
{
    PyObject *o[8];
    Arr a[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7])) {
        return NULL;
    }
    memset(a, 0, sizeof(a));
    if (get(o[6], &a[6], 1, 8, 0, "v")) {
        release(a, 8);
        return NULL;
    }
    Py_ssize_t m = a[6].buf.len / 8;
    Pairs pr;
    if (get_pairs(o, a, 0, m, &pr) || get(o[5], &a[5], 0, 8, pr.P, "alpha") || get(o[7], &a[7], 1, 8, m, "V")) {
        release(a, 8);
        return NULL;
    }
    const double *al = a[5].buf.buf;
    double *v = a[6].buf.buf, *V = a[7].buf.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t d = 0; d < m; d++) {
        v[d] = 0.0;
        V[d] = 0.0;
    }
    for (int64_t q = 0; q < pr.Q; q++) {
        for (int64_t i = pr.blocks[q]; i < pr.blocks[q + 1]; i++) {
            int64_t b = better_of(&pr, q, i), w = worse_of(&pr, q, i);
            v[b] += al[i];
            v[w] -= al[i];
            V[b] += al[i];
            V[w] += al[i];
        }
    }
    Py_END_ALLOW_THREADS
    return done(a, 8, NULL);
}

/* The position of the lowest set bit of x (x != 0). */
static inline int lowest_bit(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    while (!(x & 1)) {
        x >>= 1;
        k++;
    }
    return k;
#endif
}

/* pair_margin_sums(docs, starts, blocks, lb, lw, alpha, cell, grade, table, s, a, b, out, mask, s_ref) -> count
 * Over the pairs strictly inside their box, 0 < alpha_i < c_i (c_i as in pair_cd): y_i = a + b (s[better_i] -
 * s[worse_i]), out[d] = sum of y_i over the pairs with better = d minus the sum over those with worse = d (out is
 * zeroed first); returns how many such pairs. With s = X z this is D_F^T (a 1 + b D_F z) for
 * the set F of those pairs, without a vector the length of F. With scores s_ref (or None) F also holds the pairs
 * whose bound the margin at s_ref contradicts: alpha_i = 0 with s_ref[better_i] - s_ref[worse_i] < 1, and
 * alpha_i = c_i with it > 1 (an active-set step from the point s_ref came from). With mask (uint64, a bit a pair, or
 * None) the pass writes F there, bit i & 63 of word i >> 6 for pair i; with alpha None it reads F from the mask
 * instead (a pass that skips the weights, grades and s_ref of every pair, s_ref not read: one bit a pair where a
 * list of F's documents would take 8 bytes). */
static PyObject *pair_margin_sums(PyObject *self, PyObject *args)
{
    PyObject *o[13];
    double ca, cb;
    Arr a[13];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOddOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &ca, &cb, &o[10], &o[11], &o[12])) {
        return NULL;
    }
    memset(a, 0, sizeof(a));
    if (get(o[9], &a[9], 0, 8, 0, "s")) {
        release(a, 13);
        return NULL;
    }
    Py_ssize_t m = a[9].buf.len / 8;
    Pairs pr;
    if (get_pairs(o, a, 0, m, &pr) || get(o[5], &a[5], 0, 8, pr.P, "?alpha") || get(o[6], &a[6], 0, 8, m, "cell") ||
        get(o[7], &a[7], 0, 8, m, "grade") || get(o[8], &a[8], 0, 8, 1, "table") || get(o[10], &a[10], 1, 8, m, "out") ||
        get(o[11], &a[11], !a[5].held ? 0 : 1, 8, (pr.P + 63) / 64, a[5].held ? "?mask" : "mask") ||
        get(o[12], &a[12], 0, 8, m, "?s_ref")) {
        release(a, 13);
        return NULL;
    }
    const double *sr = a[12].held ? a[12].buf.buf : NULL;
    uint64_t *mask = a[11].held ? a[11].buf.buf : NULL;
    const double *al = a[5].held ? a[5].buf.buf : NULL, *tab = a[8].buf.buf, *s = a[9].buf.buf;
    const int64_t *cell = a[6].buf.buf, *grade = a[7].buf.buf;
    double *out = a[10].buf.buf;
    Py_ssize_t n_tab = a[8].buf.len / 8;
    int64_t count = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t d = 0; d < m; d++) {
        out[d] = 0.0;
    }
    if (mask && al) {
        for (Py_ssize_t k = 0; k < (pr.P + 63) / 64; k++) {
            mask[k] = 0;
        }
    }
    if (!al) { /* F read from the mask: its set bits in order, the query of each found from the blocks */
        int64_t q = 0;
        for (Py_ssize_t k = 0; k < (pr.P + 63) / 64; k++) {
            for (uint64_t bits = mask[k]; bits; bits &= bits - 1) {
                int64_t i = 64 * (int64_t)k + lowest_bit(bits);
                if (i >= pr.P) {
                    break;
                }
                while (pr.blocks[q + 1] <= i) {
                    q++;
                }
                int64_t b = better_of(&pr, q, i), w = worse_of(&pr, q, i);
                double y = ca + cb * (s[b] - s[w]);
                out[b] += y;
                out[w] -= y;
                count++;
            }
        }
    }
    for (int64_t q = 0; q < pr.Q && !bad && al; q++) { /* F picked by alpha (and s_ref) */
        for (int64_t i = pr.blocks[q]; i < pr.blocks[q + 1]; i++) {
            if (!(al[i] > 0.0) && !sr) {
                continue;
            }
            int64_t b = better_of(&pr, q, i), w = worse_of(&pr, q, i), t = cell[b] + grade[w];
            if (t < 0 || t >= n_tab) {
                bad = 1;
                break;
            }
            int in = al[i] > 0.0 && al[i] < tab[t];
            if (!in && sr) {
                double margin = sr[b] - sr[w];
                in = al[i] > 0.0 ? margin > 1.0 : margin < 1.0;
            }
            if (!in) {
                continue;
            }
            if (mask) {
                mask[i >> 6] |= (uint64_t)1 << (i & 63);
            }
            double y = ca + cb * (s[b] - s[w]);
            out[b] += y;
            out[w] -= y;
            count++;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        return done(a, 13, "internal error: a pair's cell out of the table");
    }
    release(a, 13);
    return PyLong_FromLongLong((long long)count);
}

/* The projection of boundary b's entries k0..k1-1 (module function balance below): nu_k = max(0, v_k - theta sig_k)
 * with theta the root of the excess, from the warm start *theta (written back); out may be v itself. Returns the
 * Newton or bisection steps taken. */
static long long project_boundary(const double *v, const double *sig, int64_t k0, int64_t k1, double *theta,
                                  double *out)
{
    double up = -INFINITY, down = -INFINITY;  /* the largest v above and below (no branch on the side: selects) */
    for (int64_t k = k0; k < k1; k++) {
        double a = sig[k] > 0 ? v[k] : -INFINITY, b = sig[k] > 0 ? -INFINITY : v[k];
        up = a > up ? a : up;
        down = b > down ? b : down;
    }
    double th = 0.0;
    long long steps = 0;
    if (up == -INFINITY || down == -INFINITY) {  /* one side only: every entry of the balanced set is 0 */
        for (int64_t k = k0; k < k1; k++) {
            out[k] = 0.0;
        }
        *theta = th;
        return 0;
    }
    /* e(lo) > 0 (no entry below is positive, the largest above is), e(hi) < 0 (the converse) */
    double lo = up < -down ? up : -down, hi = up > -down ? up : -down;
    lo -= 1.0 + fabs(lo);
    hi += 1.0 + fabs(hi);
    lo = isfinite(lo) ? lo : -DBL_MAX;  /* (|v| near the largest double) */
    hi = isfinite(hi) ? hi : DBL_MAX;
    th = *theta;
    if (!(th > lo && th < hi)) {
        th = 0.5 * lo + 0.5 * hi;
    }
    double last = INFINITY;
    for (int it = 0; it < 200; it++) {
        double e = 0.0, size = 0.0;
        int64_t active = 0;
        steps++;
        for (int64_t k = k0; k < k1; k++) {  /* without a branch on the sign (half the entries are 0): + 0.0 */
            double u = v[k] - th * sig[k];
            double p = u > 0 ? u : 0.0;
            e += sig[k] * p;
            size += p;
            active += u > 0;
        }
        if (isfinite(size) && fabs(e) <= 1e-14 * size) {  /* balanced to rounding: the root's piece */
            break;
        }
        if (e > 0) {
            lo = th;
        }
        else {
            hi = th;
        }
        double next = active ? th + e / (double)active : 0.5 * lo + 0.5 * hi;
        if (!(next > lo && next < hi) || fabs(e) > 0.5 * last) {
            next = 0.5 * lo + 0.5 * hi;
        }
        last = fabs(e);
        if (next == th || !(hi > lo) || next == lo || next == hi) {
            break;
        }
        th = next;
    }
    *theta = th;
    for (int64_t k = k0; k < k1; k++) {
        double u = v[k] - th * sig[k];
        out[k] = u > 0 ? u : 0.0;
    }
    return steps;
}

/* The boundaries' starts: starts[0] = 0, non-decreasing, starts[B] = K. */
static int check_starts(const int64_t *starts, Py_ssize_t B, Py_ssize_t K)
{
    if (starts[0] != 0 || starts[B] != K) {
        PyErr_SetString(PyExc_ValueError, "internal error: the boundaries' starts do not cover the entries");
        return -1;
    }
    for (Py_ssize_t b = 0; b < B; b++) {
        if (starts[b + 1] < starts[b]) {
            PyErr_SetString(PyExc_ValueError, "internal error: the boundaries' starts are not sorted");
            return -1;
        }
    }
    return 0;
}

/* balance(v, sig, starts, theta, out) -> steps
 * Euclidean projection of v onto {nu >= 0, sum_k sig_k nu_k = 0 over each boundary's entries}, the feasible set of
 * the threshold dual (cvxrank.native.threshold_dual): the entries of boundary b are starts[b]..starts[b+1]-1, sig is
 * +1 above it and -1 below. The projection is nu_k = max(0, v_k - theta_b sig_k) with theta_b the root of the
 * decreasing, piecewise-linear excess e(theta) = sum_k sig_k max(0, v_k - theta sig_k): safeguarded Newton from
 * theta[b] (a warm start; the root is written back) inside a bracket where e changes sign, bisection when a step
 * leaves it or gains less than half. Newton is exact on the root's linear piece, so it ends there in a few steps,
 * once |e| is within 1e-14 of the sum of its terms (rounding); the cap of 200 steps a boundary only guards against
 * rounding. Returns the steps taken. */
static PyObject *balance(PyObject *self, PyObject *args)
{
    PyObject *o[5];
    Arr a[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &o[0], &o[1], &o[2], &o[3], &o[4])) {
        return NULL;
    }
    Py_ssize_t K = first(o[0], a, 5, "v");
    if (K < 0) {
        return NULL;
    }
    if (get(o[1], &a[1], 0, 8, K, "sig") || get(o[2], &a[2], 0, 8, 1, "starts")) {
        release(a, 5);
        return NULL;
    }
    Py_ssize_t B = a[2].buf.len / 8 - 1;
    if (get(o[3], &a[3], 1, 8, B, "theta") || get(o[4], &a[4], 1, 8, K, "out")) {
        release(a, 5);
        return NULL;
    }
    const double *v = a[0].buf.buf, *sig = a[1].buf.buf;
    const int64_t *starts = a[2].buf.buf;
    double *theta = a[3].buf.buf, *out = a[4].buf.buf;
    if (check_starts(starts, B, K)) {
        release(a, 5);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < K; k++) {
        if (!isfinite(v[k])) {
            return done(a, 5, "internal error: the projection's input has a NaN or infinite value");
        }
    }
    long long steps = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < B; b++) {
        steps += project_boundary(v, sig, starts[b], starts[b + 1], theta + b, out);
    }
    Py_END_ALLOW_THREADS
    release(a, 5);
    return PyLong_FromLongLong(steps);
}

/* threshold_step(z, s, doc, sig, starts, theta, L, nu, new, u) -> (sum new, <g, new - z>, |new - z|^2, <g, new - nu>)
 * One projected gradient step of the threshold dual (cvxrank.native.threshold_dual) from z, whose documents' scores
 * are s (s = X w(z)): the gradient g_k = 1/2 - sig_k s[doc_k], new = balance(z + g / L) (as balance above, theta the
 * warm start), and u the per-document sums of sig_k new_k (u is written over: Xt u is w(new)). The same arithmetic,
 * entry by entry, as z + (0.5 - sig * s[doc]) / L, balance and np.bincount(doc, sig * new); the sums returned are
 * in entry order. */
static PyObject *threshold_step(PyObject *self, PyObject *args)
{
    PyObject *o[9];
    Arr a[9];
    double L;
    if (!PyArg_ParseTuple(args, "OOOOOOdOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &L, &o[6], &o[7], &o[8])) {
        return NULL;
    }
    Py_ssize_t K = first(o[0], a, 9, "z");
    if (K < 0) {
        return NULL;
    }
    if (get(o[1], &a[1], 0, 8, 0, "s") || get(o[2], &a[2], 0, 8, K, "doc") || get(o[3], &a[3], 0, 8, K, "sig") ||
        get(o[4], &a[4], 0, 8, 1, "starts")) {
        release(a, 9);
        return NULL;
    }
    Py_ssize_t m = a[1].buf.len / 8, B = a[4].buf.len / 8 - 1;
    if (get(o[5], &a[5], 1, 8, B, "theta") || get(o[6], &a[6], 0, 8, K, "nu") || get(o[7], &a[7], 1, 8, K, "new") ||
        get(o[8], &a[8], 1, 8, m, "u")) {
        release(a, 9);
        return NULL;
    }
    const double *z = a[0].buf.buf, *s = a[1].buf.buf, *sig = a[3].buf.buf, *nu = a[6].buf.buf;
    const int64_t *doc = a[2].buf.buf, *starts = a[4].buf.buf;
    double *theta = a[5].buf.buf, *out = a[7].buf.buf, *u = a[8].buf.buf;
    if (check_starts(starts, B, K)) {
        release(a, 9);
        return NULL;
    }
    if (!(L > 0) || !isfinite(L)) {
        return done(a, 9, "internal error: L must be positive and finite");
    }
    int bad = 0;
    for (Py_ssize_t k = 0; k < K; k++) {
        if (doc[k] < 0 || doc[k] >= m) {
            return done(a, 9, "internal error: a document index out of the scores");
        }
        out[k] = z[k] + (0.5 - sig[k] * s[doc[k]]) / L;
        bad |= !isfinite(out[k]);
    }
    if (bad) {
        return done(a, 9, "internal error: the projection's input has a NaN or infinite value");
    }
    double total = 0.0, gd = 0.0, dd = 0.0, gn = 0.0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < B; b++) {
        project_boundary(out, sig, starts[b], starts[b + 1], theta + b, out);
    }
    memset(u, 0, (size_t)m * sizeof(double));
    for (Py_ssize_t k = 0; k < K; k++) {
        double g = 0.5 - sig[k] * s[doc[k]], d = out[k] - z[k];
        total += out[k];
        gd += g * d;
        dd += d * d;
        gn += g * (out[k] - nu[k]);
        u[doc[k]] += sig[k] * out[k];
    }
    Py_END_ALLOW_THREADS
    release(a, 9);
    return Py_BuildValue("dddd", total, gd, dd, gn);
}

/* The values of a CSR matrix: float64 or float32 (format 'd' or 'f'), at least nnz of them; *single = 1 for
 * float32. Every float32 value is a float64 exactly, so the products below are those of the upcast matrix. */
static int get_values(PyObject *obj, Arr *a, Py_ssize_t nnz, int *single)
{
    a->held = 0;
    if (PyObject_GetBuffer(obj, &a->buf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    a->held = 1;
    const char *f = a->buf.format ? a->buf.format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@') {
        f++;
    }
    *single = f[0] == 'f' && f[1] == '\0' && a->buf.itemsize == 4;
    if (!(*single || (f[0] == 'd' && f[1] == '\0' && a->buf.itemsize == 8)) || a->buf.len / a->buf.itemsize < nnz) {
        PyErr_Format(PyExc_ValueError, "internal error: the values must be %zd or more float64 or float32 numbers",
                     nnz);
        return -1;
    }
    return 0;
}

/* s = X w over rows [0, m): each row's sum from 0 in the order of its entries (scipy's csr_matvec). Returns 0, or 1
 * for a decreasing indptr, 2 for a column index out of range. */
static ALWAYS_INLINE int matvec_rows(const int64_t *ip, const int32_t *ind, const void *values, int single,
                                     Py_ssize_t m, Py_ssize_t nnz, const double *w, uint32_t n, double *out)
{
    const double *vd = values;
    const float *vf = values;
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t k0 = ip[i], k1 = ip[i + 1];
        if (k1 < k0 || k1 > nnz) {
            return 1;
        }
        double sum = 0.0;
        for (int64_t k = k0; k < k1; k++) {
            uint32_t j = (uint32_t)ind[k];
            if (j >= n) {
                return 2;
            }
            sum += (single ? (double)vf[k] : vd[k]) * w[j];
        }
        out[i] = sum;
    }
    return 0;
}

/* s = X w for a CSR X (int64 indptr, int32 indices, float64 or float32 values) into out (m entries). Its argument
 * checks are written out here and in rmatvec_rows: with a shared helper, the same instructions of rmatvec_rows' loop
 * ran 0.33 ms a product instead of 0.27 on the benchmark's sparse shape, by where they landed (measured in
 * docs/native-measurements.md, 2026-11-28, 10:30). */
static PyObject *matvec(PyObject *self, PyObject *args)
{
    PyObject *o[5];
    Arr a[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &o[0], &o[1], &o[2], &o[3], &o[4])) {
        return NULL;
    }
    Py_ssize_t nnz;
    Py_ssize_t m = get_indptr(o[0], a, 5, &nnz);
    if (m < 0) {
        return NULL;
    }
    const int64_t *ip = a[0].buf.buf;
    int single = 0;
    if (get(o[1], &a[1], 0, 4, nnz, "indices") || get_values(o[2], &a[2], nnz, &single) ||
        get(o[3], &a[3], 0, 8, 0, "w") || get(o[4], &a[4], 1, 8, m, "out")) {
        release(a, 5);
        return NULL;
    }
    const int32_t *ind = a[1].buf.buf;
    const double *w = a[3].buf.buf;
    double *out = a[4].buf.buf;
    uint32_t n = (uint32_t)(a[3].buf.len / 8 < (Py_ssize_t)INT32_MAX ? a[3].buf.len / 8 : INT32_MAX);
    int bad;
    Py_BEGIN_ALLOW_THREADS
    bad = single ? matvec_rows(ip, ind, a[2].buf.buf, 1, m, nnz, w, n, out)
                 : matvec_rows(ip, ind, a[2].buf.buf, 0, m, nnz, w, n, out);
    Py_END_ALLOW_THREADS
    if (bad) {
        return done(a, 5, bad == 1 ? "internal error: indptr decreases" : "internal error: a column index out of range");
    }
    release(a, 5);
    Py_RETURN_NONE;
}

/* out = Xᵀ u over rows [0, m), rows where u is 0 skipped (they add only zeros for a finite X); each row's entries
 * added in turn, rows in order (scipy's csr_matvec on the transpose). Returns 0, 1 or 2 as matvec_rows; *rows counts
 * the rows read. */
static ALWAYS_INLINE int rmatvec_rows_of(const int64_t *ip, const int32_t *ind, const void *values, int single,
                                         Py_ssize_t m, Py_ssize_t nnz, const double *u, uint32_t n, double *out,
                                         long long *rows)
{
    const double *vd = values;
    const float *vf = values;
    long long read = 0;
    int bad = 0;
    for (Py_ssize_t i = 0; i < m && !bad; i++) {
        double x = u[i];
        int64_t k0 = ip[i], k1 = ip[i + 1];
        if (k1 < k0 || k1 > nnz) {
            bad = 1;
            break;
        }
        if (x == 0.0) {
            continue;
        }
        read++;
        for (int64_t k = k0; k < k1; k++) {
            uint32_t j = (uint32_t)ind[k];
            if (j >= n) {
                bad = 2;
                break;
            }
            out[j] += (single ? (double)vf[k] : vd[k]) * x;
        }
    }
    *rows = read;
    return bad;
}

/* Xᵀ u for a CSR X (int64 indptr, int32 indices, float64 or float32 values) into out (zeroed here); returns the
 * rows read. */
static PyObject *rmatvec_rows(PyObject *self, PyObject *args)
{
    PyObject *o[5];
    Arr a[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &o[0], &o[1], &o[2], &o[3], &o[4])) {
        return NULL;
    }
    Py_ssize_t nnz;
    Py_ssize_t m = get_indptr(o[0], a, 5, &nnz);
    if (m < 0) {
        return NULL;
    }
    const int64_t *ip = a[0].buf.buf;
    int single = 0;
    if (get(o[1], &a[1], 0, 4, nnz, "indices") || get_values(o[2], &a[2], nnz, &single) ||
        get(o[3], &a[3], 0, 8, m, "u") || get(o[4], &a[4], 1, 8, 0, "out")) {
        release(a, 5);
        return NULL;
    }
    const int32_t *ind = a[1].buf.buf;
    const double *u = a[3].buf.buf;
    double *out = a[4].buf.buf;
    uint32_t n = (uint32_t)(a[4].buf.len / 8 < (Py_ssize_t)INT32_MAX ? a[4].buf.len / 8 : INT32_MAX);
    long long rows = 0;
    int bad;
    Py_BEGIN_ALLOW_THREADS
    memset(out, 0, (size_t)(a[4].buf.len / 8) * sizeof(double));
    bad = single ? rmatvec_rows_of(ip, ind, a[2].buf.buf, 1, m, nnz, u, n, out, &rows)
                 : rmatvec_rows_of(ip, ind, a[2].buf.buf, 0, m, nnz, u, n, out, &rows);
    Py_END_ALLOW_THREADS
    if (bad) {
        return done(a, 5, bad == 1 ? "internal error: indptr decreases" : "internal error: a column index out of range");
    }
    release(a, 5);
    return PyLong_FromLongLong(rows);
}

static PyMethodDef methods[] = {
    {"bounds", bounds, METH_VARARGS, "Violation boundaries of every sorted position (two pointers per query)."},
    {"violations", violations, METH_VARARGS, "Violated weight of every sorted position, in one pass per query."},
    {"band_counts", band_counts, METH_VARARGS, "Pairs of positions with score differences in [margin, 1), for several margins."},
    {"band", band, METH_VARARGS, "The pairs between two boundaries of lower grade and positive weight."},
    {"pair_rows", pair_rows, METH_VARARGS, "Scaled differences of rows of X, one per pair."},
    {"smoothed_groups", smoothed_groups, METH_VARARGS, "The smoothed hinge's per-member terms of sorted groups."},
    {"pair_cd", pair_cd, METH_VARARGS, "Passes of dual coordinate descent over explicit pairs of a CSR X."},
    {"pair_sums", pair_sums, METH_VARARGS, "Per-document signed and absolute sums of pair weights."},
    {"pair_margin_sums", pair_margin_sums, METH_VARARGS, "Per-document sums over the pairs inside their box."},
    {"balance", balance, METH_VARARGS, "Projection onto non-negative entries balanced over each boundary."},
    {"threshold_step", threshold_step, METH_VARARGS, "A projected gradient step of the threshold dual, with its sums."},
    {"matvec", matvec, METH_VARARGS, "X w for a CSR X (float64 or float32 values), each row summed in order from 0."},
    {"rmatvec_rows", rmatvec_rows, METH_VARARGS, "Xt u for a CSR X (float64 or float32 values), skipping the rows where u is 0."},
    {"resort", resort, METH_VARARGS, "Insertion sort of every query from the previous order, with a cap on moves."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sweep",
                                    "Compiled sweeps of the pair-free oracle (see cvxrank.native.kernels).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sweep(void)
{
    return PyModule_Create(&module);
}
