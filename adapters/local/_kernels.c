/* The local backend's compiled kernel: the lexical channel's BM25 sums over one scan (`sums`),
 * and the fusion of the scan's two rankings (`fuse`, at the end of this file).
 *
 * Optional (setup.py builds it where a C compiler is found); each function's numpy twin
 * (`_bm25_sums_numpy` in adapters/local/lexical_search.py, `fused_rows` in
 * adapters/shared/fusion.py) runs where it was not built and is what the tests hold it to.
 *
 * Why C: the same sums in numpy are some thirty array operations and a Python loop over every
 * postings piece and query term, each on arrays of a few hundred elements, so their cost is
 * numpy's per-call overhead: about a sixth of a whole recall. Here they are two loops.
 *
 * Exact to the bit with the numpy path: the same operations in the same order and precision
 * (the length norm in float32, the rest in float64, each row's postings added in the order the
 * numpy path concatenates them). The build turns floating-point contraction off
 * (-ffp-contract=off: no fused multiply-add), and the inverse document frequencies, whose log1p
 * numpy may compute with its own vector code, are computed by the caller in numpy (`weigh`).
 *
 * Memory safety: every buffer's item size and length is checked, every postings piece must lie
 * inside its partition, every posting read must lie inside its piece, and every ranked index of
 * the fusion inside the scan's rows; anything else raises ValueError before the element it would
 * index is touched.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    Py_buffer digests, positions, counts, lengths;
    Py_ssize_t start, end, offset;
    int held;  /* how many of the four buffers are held (released on the way out) */
} Piece;

/* The type character of a buffer in this machine's own byte order, else 0: a format with an
 * explicit byte order ('<', '>', '!') could name the other one, whose bytes would be misread. */
static char
native_kind(const Py_buffer *view)
{
    const char *format = view->format ? view->format : "B";
    if (format[0] == '@' || format[0] == '=')
        format++;
    return strlen(format) == 1 ? format[0] : 0;
}

static int
take(PyObject *owner, const char *name, Py_buffer *view, Py_ssize_t itemsize, const char *kinds)
{
    PyObject *obj = PyObject_GetAttrString(owner, name);
    if (obj == NULL)
        return -1;
    int rc = PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT);
    Py_DECREF(obj);
    if (rc < 0)
        return -1;
    char kind = native_kind(view);
    if (view->itemsize != itemsize || view->ndim != 1 || kind == 0 || strchr(kinds, kind) == NULL) {
        PyErr_Format(PyExc_ValueError, "postings %s: expected %zd-byte native items of kind %s, got %zd-byte '%s'",
                     name, itemsize, kinds, view->itemsize, view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A one-dimensional buffer argument, checked; `writable` only for the ones the kernel fills. */
static int
plain(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *kinds, Py_ssize_t length, const char *what, int writable)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    char kind = native_kind(view);
    if (view->itemsize != itemsize || view->ndim != 1 || kind == 0 || strchr(kinds, kind) == NULL || (length >= 0 && view->shape[0] != length)) {
        PyErr_Format(PyExc_ValueError, "%s: wrong item size, kind or length", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void
release(Piece *pieces, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_buffer *views[4] = {&pieces[i].digests, &pieces[i].positions, &pieces[i].counts, &pieces[i].lengths};
        for (int v = 0; v < pieces[i].held; v++)
            PyBuffer_Release(views[v]);
    }
}

/* the first index of `digests` (sorted ascending) holding a value >= probe: numpy's searchsorted, side left */
static Py_ssize_t
lower_bound(const uint64_t *digests, Py_ssize_t n, uint64_t probe)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (digests[mid] < probe)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Load every piece of every segment, checked; NULL with an exception set on any fault. */
static Piece *
load(PyObject *segments, Py_ssize_t size, Py_ssize_t *count_out)
{
    Py_ssize_t count = 0, n_segments = PyList_GET_SIZE(segments);
    for (Py_ssize_t s = 0; s < n_segments; s++) {
        PyObject *segment = PyList_GET_ITEM(segments, s);
        if (!PyTuple_Check(segment) || PyTuple_GET_SIZE(segment) != 3 || !PyList_Check(PyTuple_GET_ITEM(segment, 0))) {
            PyErr_SetString(PyExc_TypeError, "a segment is a (pieces list, offset, rows) tuple");
            return NULL;
        }
        count += PyList_GET_SIZE(PyTuple_GET_ITEM(segment, 0));
    }
    Piece *pieces = PyMem_Calloc(count ? count : 1, sizeof(Piece));
    if (pieces == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t s = 0; s < n_segments; s++) {
        PyObject *segment = PyList_GET_ITEM(segments, s);
        PyObject *list = PyTuple_GET_ITEM(segment, 0);
        Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(segment, 1));
        Py_ssize_t rows = PyLong_AsSsize_t(PyTuple_GET_ITEM(segment, 2));
        if (PyErr_Occurred())
            goto fail;
        if (offset < 0 || rows < 0 || offset > size - rows) {
            PyErr_SetString(PyExc_ValueError, "a segment lies outside the scan's buffer");
            goto fail;
        }
        Py_ssize_t covered = 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++, k++) {
            PyObject *obj = PyList_GET_ITEM(list, i);
            Piece *p = &pieces[k];
            p->offset = offset;
            if (take(obj, "digests", &p->digests, 8, "LQ") < 0) goto fail;
            p->held = 1;
            if (take(obj, "positions", &p->positions, 4, "i") < 0) goto fail;
            p->held = 2;
            if (take(obj, "counts", &p->counts, 4, "f") < 0) goto fail;
            p->held = 3;
            if (take(obj, "lengths", &p->lengths, 4, "f") < 0) goto fail;
            p->held = 4;
            PyObject *start = PyObject_GetAttrString(obj, "start"), *end = PyObject_GetAttrString(obj, "end");
            p->start = start ? PyLong_AsSsize_t(start) : -1;
            p->end = end ? PyLong_AsSsize_t(end) : -1;
            Py_XDECREF(start);
            Py_XDECREF(end);
            if (PyErr_Occurred())
                goto fail;
            Py_ssize_t postings = p->digests.shape[0];
            /* pieces cover the partition's positions [0, rows) in order, as the numpy path's lengths do */
            if (p->start != covered || p->end < p->start || p->end > rows || p->lengths.shape[0] != p->end - p->start
                || p->positions.shape[0] != postings || p->counts.shape[0] != postings) {
                PyErr_SetString(PyExc_ValueError, "a postings piece does not fit its partition");
                goto fail;
            }
            covered = p->end;
        }
        if (covered != rows) {
            PyErr_SetString(PyExc_ValueError, "a segment's postings do not cover its rows");
            goto fail;
        }
    }
    *count_out = count;
    return pieces;
fail:
    release(pieces, count);
    PyMem_Free(pieces);
    return NULL;
}

PyDoc_STRVAR(sums_doc,
"sums(segments, probes, returnable, lengths, held, out, weigh, k1, b) -> bool\n\n"
"BM25 sums of a scan into `out` (float64 zeros, one per buffer row). `segments`: a list of\n"
"(postings pieces, buffer offset, rows) per partition; `probes`: uint64, the question's sorted\n"
"digests then each plus one; `returnable`: bool per buffer row. Fills `lengths` (float32, the\n"
"rows' term counts) and `held` (float64 zeros, per term the returnable rows holding it), then\n"
"calls `weigh(total)` with the returnable rows' summed length (exact), which returns (idf\n"
"float64 per term, mean length). Returns False, without calling `weigh`, when no returnable\n"
"row holds a query word, else True.");

static PyObject *
sums(PyObject *module, PyObject *args)
{
    PyObject *segments, *probes_obj, *returnable_obj, *lengths_obj, *held_obj, *out_obj, *weigh;
    double k1, b;
    if (!PyArg_ParseTuple(args, "O!OOOOOOdd", &PyList_Type, &segments, &probes_obj, &returnable_obj, &lengths_obj, &held_obj,
                          &out_obj, &weigh, &k1, &b))
        return NULL;
    Py_buffer probes_v, returnable_v, lengths_v, held_v, out_v, idf_v;
    int have = 0; /* buffers held, in the order above */
    Piece *pieces = NULL;
    Py_ssize_t n_pieces = 0, *bounds = NULL;
    PyObject *result = NULL, *weighed = NULL;

    if (plain(probes_obj, &probes_v, 8, "LQ", -1, "probes", 0) < 0) goto done;
    have = 1;
    if (plain(returnable_obj, &returnable_v, 1, "?", -1, "returnable", 0) < 0) goto done;
    have = 2;
    Py_ssize_t size = returnable_v.shape[0], terms = probes_v.shape[0] / 2;
    if (plain(lengths_obj, &lengths_v, 4, "f", size, "lengths", 1) < 0) goto done;
    have = 3;
    if (plain(held_obj, &held_v, 8, "d", terms, "held", 1) < 0) goto done;
    have = 4;
    if (plain(out_obj, &out_v, 8, "d", size, "out", 1) < 0) goto done;
    have = 5;
    if (probes_v.shape[0] != 2 * terms) {
        PyErr_SetString(PyExc_ValueError, "probes: each digest, then each plus one");
        goto done;
    }
    pieces = load(segments, size, &n_pieces);
    if (pieces == NULL) goto done;
    bounds = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (n_pieces * terms + 1));
    if (bounds == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const uint64_t *probes = probes_v.buf;
    const char *returnable = returnable_v.buf;
    float *lengths = lengths_v.buf;
    double *held = held_v.buf, *out = out_v.buf;

    /* pass 1: lengths, each term's postings in each piece, and the returnable rows holding it */
    int found = 0;
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        Piece *p = &pieces[k];
        memcpy(lengths + p->offset + p->start, p->lengths.buf, sizeof(float) * (p->end - p->start));
        const uint64_t *digests = p->digests.buf;
        const int32_t *positions = p->positions.buf;
        Py_ssize_t postings = p->digests.shape[0];
        for (Py_ssize_t t = 0; t < terms; t++) {
            Py_ssize_t lo = lower_bound(digests, postings, probes[t]), hi = lower_bound(digests, postings, probes[terms + t]);
            if (hi < lo)
                hi = lo; /* probes out of order: no posting, never a negative range */
            bounds[2 * (k * terms + t)] = lo;
            bounds[2 * (k * terms + t) + 1] = hi;
            found |= hi > lo;
            for (Py_ssize_t j = lo; j < hi; j++) {
                /* checked here, for the postings read (pass 2 reads no others) */
                if (positions[j] < p->start || positions[j] >= p->end) {
                    PyErr_SetString(PyExc_ValueError, "a posting's position lies outside its piece");
                    goto done;
                }
                held[t] += returnable[p->offset + positions[j]] ? 1.0 : 0.0;
            }
        }
    }
    int held_any = 0;
    for (Py_ssize_t t = 0; t < terms; t++)
        held_any |= held[t] > 0.0;
    if (!found || !held_any) { /* no posting, or none of a returnable row: no row can score */
        result = Py_NewRef(Py_False);
        goto done;
    }
    /* the returnable rows' summed length: whole numbers, so this double sum is exact */
    double total = 0.0;
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        Piece *p = &pieces[k];
        for (Py_ssize_t row = p->offset + p->start; row < p->offset + p->end; row++)
            total += returnable[row] ? (double)lengths[row] : 0.0;
    }
    weighed = PyObject_CallFunction(weigh, "d", total);
    if (weighed == NULL) goto done;
    if (!PyTuple_Check(weighed) || PyTuple_GET_SIZE(weighed) != 2) {
        PyErr_SetString(PyExc_TypeError, "weigh(total length) returns (idf, mean length)");
        goto done;
    }
    double avg = PyFloat_AsDouble(PyTuple_GET_ITEM(weighed, 1));
    if (avg == -1.0 && PyErr_Occurred()) goto done;
    if (plain(PyTuple_GET_ITEM(weighed, 0), &idf_v, 8, "d", terms, "idf", 0) < 0) goto done;
    have = 6;
    const double *idf = idf_v.buf;

    /* pass 2: each returnable posting's weight, added to its row in the numpy path's order.
     * The norm is K1 * (1 - B + B * length / mean), float32, operation by operation as numpy
     * does it in place; the weight idf * count * (K1 + 1) / (count + norm), float64. */
    const float bf = (float)b, avgf = (float)avg, restf = (float)(1.0 - b), k1f = (float)k1;
    const double k1_plus_one = k1 + 1.0;
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        Piece *p = &pieces[k];
        const int32_t *positions = p->positions.buf;
        const float *counts = p->counts.buf;
        for (Py_ssize_t t = 0; t < terms; t++) {
            Py_ssize_t lo = bounds[2 * (k * terms + t)], hi = bounds[2 * (k * terms + t) + 1];
            for (Py_ssize_t j = lo; j < hi; j++) {
                Py_ssize_t row = p->offset + positions[j];
                if (!returnable[row])
                    continue; /* the numpy path adds 0.0 for it: the same */
                float norm = lengths[row];
                norm *= bf;
                norm /= avgf;
                norm += restf;
                norm *= k1f;
                double count = (double)counts[j];
                double weight = idf[t];
                weight *= count;
                weight *= k1_plus_one;
                count += (double)norm;
                weight /= count;
                out[row] += weight;
            }
        }
    }
    result = Py_NewRef(Py_True);
done:
    if (pieces != NULL) {
        release(pieces, n_pieces);
        PyMem_Free(pieces);
    }
    PyMem_Free(bounds);
    Py_buffer *views[6] = {&probes_v, &returnable_v, &lengths_v, &held_v, &out_v, &idf_v};
    for (int v = 0; v < have; v++)
        PyBuffer_Release(views[v]);
    Py_XDECREF(weighed);
    return result;
}

/* -- the fusion of a scan's two rankings -----------------------------------------------------
 *
 * Why C: `fused_rows` is a dozen numpy operations and a Python loop over the chosen rows, on
 * about a hundred entries: ~35 us of per-call overhead for work a sort of a hundred structs does
 * in a few. Exact: the fusion weights are computed and summed as fusion.py does (w / (k + rank +
 * 1.0), negated, the vector term first), the order is np.lexsort's (weight, then minus cosine,
 * then id, then entry order), and the scores are `_non_increasing`'s loop, in float64. */

typedef struct {
    double total;   /* minus the row's fused weight */
    double negcos;  /* minus its cosine, as float64 */
    int64_t id;
    Py_ssize_t at;  /* its entry: the vector ranking's, then the lexical ranking's */
    Py_ssize_t row;
} Entry;

/* numpy's sort order for float64 keys: NaN after every number, NaNs equal to each other */
static int
compare_key(double a, double b)
{
    int an = a != a, bn = b != b;
    if (an || bn)
        return an - bn;
    return (a > b) - (a < b);
}

/* np.lexsort((ids, -cosines, totals)): totals first, then minus cosine, then id; equal keys in
 * entry order (lexsort is stable) */
static int
compare_entries(const void *x, const void *y)
{
    const Entry *a = x, *b = y;
    int c = compare_key(a->total, b->total);
    if (c == 0)
        c = compare_key(a->negcos, b->negcos);
    if (c == 0)
        c = (a->id > b->id) - (a->id < b->id);
    if (c == 0)
        c = (a->at > b->at) - (a->at < b->at);
    return c;
}

PyDoc_STRVAR(fuse_doc,
"fuse(vector, lexical, ids, cosines, limit, out, k, vector_weight, lexical_weight) -> (count, scores)\n\n"
"`fused_rows` (adapters/shared/fusion.py): the reciprocal rank fusion of two rankings of a scan's\n"
"buffer rows (`vector`, `lexical`: intp indices, best first, each naming a row at most once),\n"
"with `ids` (int64) and `cosines` (float32) one per row. Writes the indices of the fused top\n"
"`limit` into `out` (intp, room for both rankings) and returns how many, with their scores\n"
"(each its cosine, raised to 1e-6 above the next where needed, at most 1.0).");

static PyObject *
fuse(PyObject *module, PyObject *args)
{
    PyObject *vector_obj, *lexical_obj, *ids_obj, *cosines_obj, *out_obj;
    Py_ssize_t limit;
    double k, vector_weight, lexical_weight;
    if (!PyArg_ParseTuple(args, "OOOOnOddd", &vector_obj, &lexical_obj, &ids_obj, &cosines_obj, &limit, &out_obj, &k,
                          &vector_weight, &lexical_weight))
        return NULL;
    Py_buffer vector_v, lexical_v, ids_v, cosines_v, out_v;
    int have = 0;
    int32_t *rank_of = NULL; /* per row: its vector rank + 1, then its lexical rank + 1 (0: absent) */
    Entry *entries = NULL;
    PyObject *result = NULL, *scores = NULL;

    if (plain(vector_obj, &vector_v, 8, "lq", -1, "vector", 0) < 0) goto done;
    have = 1;
    if (plain(lexical_obj, &lexical_v, 8, "lq", -1, "lexical", 0) < 0) goto done;
    have = 2;
    if (plain(ids_obj, &ids_v, 8, "lq", -1, "ids", 0) < 0) goto done;
    have = 3;
    Py_ssize_t rows = ids_v.shape[0], vc = vector_v.shape[0], lc = lexical_v.shape[0];
    if (plain(cosines_obj, &cosines_v, 4, "f", rows, "cosines", 0) < 0) goto done;
    have = 4;
    if (plain(out_obj, &out_v, 8, "lq", vc + lc, "out", 1) < 0) goto done;
    have = 5;
    if (limit < 0 || rows > INT32_MAX || vc > INT32_MAX - 1 || lc > INT32_MAX - 1) {
        PyErr_SetString(PyExc_ValueError, "fuse: a negative limit or a ranking too long");
        goto done;
    }
    const int64_t *vector = vector_v.buf, *lexical = lexical_v.buf, *ids = ids_v.buf;
    const float *cosines = cosines_v.buf;
    int64_t *out = out_v.buf;
    rank_of = PyMem_Calloc(rows ? 2 * (size_t)rows : 1, sizeof(int32_t));
    entries = PyMem_Malloc(sizeof(Entry) * (size_t)(vc + lc ? vc + lc : 1));
    if (rank_of == NULL || entries == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < vc + lc; r++) {
        int64_t row = r < vc ? vector[r] : lexical[r - vc];
        if (row < 0 || row >= rows) {
            PyErr_SetString(PyExc_ValueError, "fuse: a ranked index lies outside the rows");
            goto done;
        }
        int32_t *slot = r < vc ? &rank_of[2 * row] : &rank_of[2 * row + 1];
        if (*slot != 0) {
            PyErr_SetString(PyExc_ValueError, "fuse: a ranking names a row twice");
            goto done;
        }
        *slot = (int32_t)(r < vc ? r : r - vc) + 1;
    }
    /* each row once: its vector entry (with its lexical term added), or its lexical entry; the
     * weights as fusion.py computes them (w / (k + rank + 1.0)), negated, and summed in the same
     * order (the vector term first, then the lexical term or 0.0) */
    Py_ssize_t n = 0;
    for (Py_ssize_t r = 0; r < vc + lc; r++) {
        int64_t row = r < vc ? vector[r] : lexical[r - vc];
        double total;
        if (r < vc) {
            int32_t lexical_rank = rank_of[2 * row + 1];
            double lexical_term = lexical_rank ? -(lexical_weight / (k + (double)(lexical_rank - 1) + 1.0)) : 0.0;
            total = -(vector_weight / (k + (double)r + 1.0)) + lexical_term;
        } else {
            if (rank_of[2 * row] != 0)
                continue; /* the vector ranking holds it: its lexical entry weighs 0 and is never chosen */
            total = -(lexical_weight / (k + (double)(r - vc) + 1.0));
        }
        entries[n].total = total;
        entries[n].negcos = -(double)cosines[row];
        entries[n].id = ids[row];
        entries[n].at = r;
        entries[n].row = row;
        n++;
    }
    qsort(entries, (size_t)n, sizeof(Entry), compare_entries);
    Py_ssize_t count = n < limit ? n : limit;
    scores = PyList_New(count);
    if (scores == NULL) goto done;
    double floor = -Py_HUGE_VAL; /* fusion.py's _non_increasing, from the last hit up */
    for (Py_ssize_t i = count - 1; i >= 0; i--) {
        double value = -entries[i].negcos, raised = floor + 1e-6;
        if (raised > value)
            value = raised;
        floor = value < 1.0 ? value : 1.0;
        PyObject *score = PyFloat_FromDouble(floor);
        if (score == NULL) goto done;
        PyList_SET_ITEM(scores, i, score);
        out[i] = entries[i].row;
    }
    result = Py_BuildValue("nO", count, scores);
done:
    PyMem_Free(rank_of);
    PyMem_Free(entries);
    Py_XDECREF(scores);
    Py_buffer *views[5] = {&vector_v, &lexical_v, &ids_v, &cosines_v, &out_v};
    for (int v = 0; v < have; v++)
        PyBuffer_Release(views[v]);
    return result;
}

static PyMethodDef methods[] = {
    {"sums", sums, METH_VARARGS, sums_doc},
    {"fuse", fuse, METH_VARARGS, fuse_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "The local backend's compiled kernel (see _kernels.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
