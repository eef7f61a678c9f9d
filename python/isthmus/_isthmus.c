/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus._isthmus: the CPython binding of libisthmus (lib/island).
 *
 * One Python Session wraps one struct isth_island. Tensors cross without a
 * copy: anything with the buffer protocol (NumPy arrays, bytearray,
 * array.array, memoryview) or a contiguous CPU torch tensor (which has no
 * buffer protocol: its data_ptr() is used, the tensor object being held
 * for the call). Every call that may block releases the GIL; the library
 * is thread-safe (one mutex, leader/follower on the socket), so several
 * Python threads may use one session. close() refuses while another
 * thread is inside a call, because the handle would be freed under it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>

#include "isth_island.h"
#include "isth_wire.h"
#include "isth_version.h"

static PyObject *IsthError; /* isthmus.Error(OSError) */
static PyObject *IsthTimeout; /* isthmus.Timeout(Error, TimeoutError) */
static PyTypeObject RoundType;
static PyTypeObject ResultType;

/* ---- errors ---------------------------------------------------------- */

/* Raise isthmus.Error (or Timeout) with errno and "what: C reason". */
static PyObject *
raise_errno(int err, const char *what, const char *detail)
{
	PyObject *exc = err == ETIMEDOUT || err == ENOENT ? IsthTimeout : IsthError;
	PyObject *args;
	char msg[1536];

	if (detail)
		snprintf(msg, sizeof(msg), "%s: %s (%s)", what, strerror(err), detail);
	else
		snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	args = Py_BuildValue("(is)", err, msg);
	if (args == NULL)
		return NULL;
	PyErr_SetObject(exc, args);
	Py_DECREF(args);
	return NULL;
}

/* ---- timeouts -------------------------------------------------------- */

/* A Timeout whose message also says what the session received and
 * refused meanwhile (isth_island_diagnose(): another source, wire
 * version, key, job or island; or nothing at all), if anything. */
static PyObject *
raise_timeout(struct isth_island *s, int err, const char *what, const char *base)
{
	char d[1024], msg[1200];

	if (isth_island_diagnose(s, d, sizeof(d)) <= 0)
		return raise_errno(err, what, base);
	snprintf(msg, sizeof(msg), "%s; %s", base, d);
	return raise_errno(err, what, msg);
}

/* Seconds (float, None: forever) to ns. */
static int
timeout_ns(PyObject *o, uint64_t *out)
{
	double s;

	if (o == NULL || o == Py_None) {
		*out = UINT64_MAX;
		return 0;
	}
	s = PyFloat_AsDouble(o);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	if (!(s >= 0)) {
		PyErr_SetString(PyExc_ValueError, "timeout must be >= 0 seconds or None");
		return -1;
	}
	*out = s >= 1.8e10 ? UINT64_MAX : (uint64_t)(s * 1e9);
	return 0;
}

/* ---- tensors --------------------------------------------------------- */

/* A tensor's memory for one call: a buffer view or a torch tensor's. */
struct tensor_mem {
	Py_buffer view;
	bool have_view;
	void *ptr;
	size_t nbytes;
	size_t itemsize;
	char kind; /* 'f' float32, 'i' int32, 'b' bf16/16-bit */
};

static void
tensor_release(struct tensor_mem *t)
{
	if (t->have_view)
		PyBuffer_Release(&t->view);
	t->have_view = false;
}

/* Call obj.name() and return the result (new reference). */
static PyObject *
call0(PyObject *obj, const char *name)
{
	return PyObject_CallMethod(obj, name, NULL);
}

/*
 * A torch.Tensor (duck-typed: data_ptr, is_contiguous, element_size,
 * numel, device, dtype). Only contiguous CPU tensors: their memory is
 * the host memory at data_ptr(), alive as long as the tensor is.
 */
static int
tensor_torch(PyObject *obj, struct tensor_mem *t, const char *what)
{
	PyObject *dev = NULL, *devtype = NULL, *dt = NULL, *r = NULL, *dto = NULL;
	long long ptr, esize, numel;
	const char *dts;
	int rc = -1;

	dev = PyObject_GetAttrString(obj, "device");
	if (dev == NULL)
		goto out;
	devtype = PyObject_GetAttrString(dev, "type");
	if (devtype == NULL || !PyUnicode_Check(devtype))
		goto out;
	if (strcmp(PyUnicode_AsUTF8(devtype), "cpu") != 0) {
		PyErr_Format(PyExc_ValueError, "%s: tensor is on %U, not the CPU", what, devtype);
		goto out;
	}
	r = call0(obj, "is_contiguous");
	if (r == NULL)
		goto out;
	if (!PyObject_IsTrue(r)) {
		PyErr_Format(PyExc_ValueError, "%s: tensor is not contiguous (call .contiguous())",
			what);
		goto out;
	}
	Py_CLEAR(r);
	dto = PyObject_GetAttrString(obj, "dtype");
	dt = dto ? PyObject_Str(dto) : NULL;
	if (dt == NULL)
		goto out;
	dts = PyUnicode_AsUTF8(dt);
	if (strcmp(dts, "torch.float32") == 0)
		t->kind = 'f';
	else if (strcmp(dts, "torch.int32") == 0)
		t->kind = 'i';
	else if (strcmp(dts, "torch.bfloat16") == 0)
		t->kind = 'b';
	else {
		PyErr_Format(PyExc_TypeError,
			"%s: tensor dtype %s is not float32, bfloat16 or int32", what, dts);
		goto out;
	}
	r = call0(obj, "data_ptr");
	if (r == NULL || (ptr = PyLong_AsLongLong(r)) == -1)
		goto out;
	Py_CLEAR(r);
	r = call0(obj, "element_size");
	if (r == NULL || (esize = PyLong_AsLongLong(r)) == -1)
		goto out;
	Py_CLEAR(r);
	r = call0(obj, "numel");
	if (r == NULL || (numel = PyLong_AsLongLong(r)) == -1)
		goto out;
	t->ptr = (void *)(uintptr_t)ptr;
	t->itemsize = (size_t)esize;
	t->nbytes = (size_t)numel * (size_t)esize;
	rc = 0;
out:
	Py_XDECREF(dev);
	Py_XDECREF(devtype);
	Py_XDECREF(dt);
	Py_XDECREF(dto);
	Py_XDECREF(r);
	return rc;
}

/* Map a buffer format to a kind: 'f' float32, 'i' int32, 'b' 16-bit. */
static char
format_kind(const char *fmt, Py_ssize_t itemsize)
{
	if (fmt == NULL)
		fmt = "B";
	while (*fmt == '@' || *fmt == '=' || *fmt == '<')
		fmt++;
	if (fmt[0] && fmt[1])
		return 0;
	if (fmt[0] == 'f' && itemsize == 4)
		return 'f';
	if ((fmt[0] == 'i' || fmt[0] == 'I' || fmt[0] == 'l' || fmt[0] == 'L') && itemsize == 4)
		return 'i';
	if ((fmt[0] == 'H' || fmt[0] == 'h') && itemsize == 2)
		return 'b';
	return 0;
}

static int
tensor_get(PyObject *obj, bool writable, struct tensor_mem *t, const char *what)
{
	memset(t, 0, sizeof(*t));
	if (PyObject_CheckBuffer(obj)) {
		int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);

		if (PyObject_GetBuffer(obj, &t->view, flags) < 0)
			return -1;
		t->have_view = true;
		t->kind = format_kind(t->view.format, t->view.itemsize);
		if (t->kind == 0) {
			PyErr_Format(PyExc_TypeError,
				"%s: element format '%s' (%zd bytes) is not float32, int32 or "
				"a 16-bit bf16 word",
				what, t->view.format ? t->view.format : "B", t->view.itemsize);
			tensor_release(t);
			return -1;
		}
		t->ptr = t->view.buf;
		t->nbytes = (size_t)t->view.len;
		t->itemsize = (size_t)t->view.itemsize;
		return 0;
	}
	if (PyObject_HasAttrString(obj, "data_ptr"))
		return tensor_torch(obj, t, what);
	PyErr_Format(PyExc_TypeError,
		"%s: expected a contiguous array (buffer protocol) or CPU torch tensor, got %s",
		what, Py_TYPE(obj)->tp_name);
	return -1;
}

/* ---- Round and Result ------------------------------------------------- */

static PyStructSequence_Field round_fields[] = {
	{"round", "round number"},
	{"start_ns", "round start, CLOCK_REALTIME ns"},
	{"deadline_ns", "aggregates are due by then"},
	{"period_ns", "the schedule's T"},
	{"clique", "bitmap of the clique, self included"},
	{"expected", "bitmap of the peers whose contributions to expect"},
	{"n_chunks", "chunks per tensor"},
	{"chunk_elems", "elements per full chunk"},
	{NULL, NULL},
};

static PyStructSequence_Desc round_desc = {
	"isthmus.Round",
	"What a ROUND announced.",
	round_fields,
	8,
};

static PyStructSequence_Field result_fields[] = {
	{"round", "round number"},
	{"complete", "True if every chunk has every expected contributor"},
	{"bitmap", "contributors summed into every chunk (AND over chunks)"},
	{"missing", "contributors missing from some chunk (OR over chunks)"},
	{"partial", "chunks missing a contributor"},
	{"chunks_complete", "chunks with every expected contributor"},
	{"missing_contributions", "contributions missing, over all chunks"},
	{"chunk_bitmaps", "tuple: contributors summed into each chunk"},
	{"expected", "contributors the round expected (self included if sent)"},
	{"self_sent", "own contribution is in the sums"},
	{"early", "complete before the deadline"},
	{"end_ns", "session clock when the round ended"},
	{"missing_str", "what is missing: 'island 2 chunks 0-5,9', or 'none'"},
	{NULL, NULL},
};

static PyStructSequence_Desc result_desc = {
	"isthmus.Result",
	"The outcome of a round.",
	result_fields,
	13,
};

static PyObject *
round_new(const struct isth_island_round *ri)
{
	PyObject *r = PyStructSequence_New(&RoundType);

	if (r == NULL)
		return NULL;
	PyStructSequence_SET_ITEM(r, 0, PyLong_FromUnsignedLong(ri->round));
	PyStructSequence_SET_ITEM(r, 1, PyLong_FromUnsignedLongLong(ri->start_ns));
	PyStructSequence_SET_ITEM(r, 2, PyLong_FromUnsignedLongLong(ri->deadline_ns));
	PyStructSequence_SET_ITEM(r, 3, PyLong_FromUnsignedLongLong(ri->period_ns));
	PyStructSequence_SET_ITEM(r, 4, PyLong_FromUnsignedLongLong(ri->clique));
	PyStructSequence_SET_ITEM(r, 5, PyLong_FromUnsignedLongLong(ri->expected));
	PyStructSequence_SET_ITEM(r, 6, PyLong_FromUnsignedLong(ri->n_chunks));
	PyStructSequence_SET_ITEM(r, 7, PyLong_FromUnsignedLong(ri->chunk_elems));
	if (PyErr_Occurred()) {
		Py_DECREF(r);
		return NULL;
	}
	return r;
}

/* @ch: the @n chunks of the session's range, chunk ids from @first. */
static PyObject *
result_new(const struct isth_island_result *res, const struct isth_island_chunk *ch, uint32_t n,
	uint32_t first)
{
	PyObject *r = PyStructSequence_New(&ResultType), *bm;
	uint64_t all = UINT64_MAX, expected = 0;
	char miss[1024];
	uint32_t c;

	if (r == NULL)
		return NULL;
	bm = PyTuple_New(n);
	if (bm == NULL) {
		Py_DECREF(r);
		return NULL;
	}
	for (c = 0; c < n; c++) {
		all &= ch[c].bitmap;
		expected |= ch[c].expected;
		PyTuple_SET_ITEM(bm, c, PyLong_FromUnsignedLongLong(ch[c].bitmap));
	}
	isth_island_missing_str_at(ch, n, first, miss, sizeof(miss));
	PyStructSequence_SET_ITEM(r, 0, PyLong_FromUnsignedLong(res->round));
	PyStructSequence_SET_ITEM(r, 1, PyBool_FromLong(res->partial == 0));
	PyStructSequence_SET_ITEM(r, 2, PyLong_FromUnsignedLongLong(n ? all : 0));
	PyStructSequence_SET_ITEM(r, 3, PyLong_FromUnsignedLongLong(res->missing_set));
	PyStructSequence_SET_ITEM(r, 4, PyLong_FromUnsignedLong(res->partial));
	PyStructSequence_SET_ITEM(r, 5, PyLong_FromUnsignedLong(res->complete));
	PyStructSequence_SET_ITEM(r, 6, PyLong_FromUnsignedLongLong(res->missing));
	PyStructSequence_SET_ITEM(r, 7, bm);
	PyStructSequence_SET_ITEM(r, 8, PyLong_FromUnsignedLongLong(expected));
	PyStructSequence_SET_ITEM(r, 9, PyBool_FromLong(res->self_sent));
	PyStructSequence_SET_ITEM(r, 10, PyBool_FromLong(res->early));
	PyStructSequence_SET_ITEM(r, 11, PyLong_FromUnsignedLongLong(res->end_ns));
	PyStructSequence_SET_ITEM(r, 12, PyUnicode_FromString(miss));
	if (PyErr_Occurred()) {
		Py_DECREF(r);
		return NULL;
	}
	return r;
}

/* ---- Session ---------------------------------------------------------- */

typedef struct {
	PyObject_HEAD struct isth_island *s;
	struct isth_island_conf conf;
	uint32_t n_chunks; /* the whole tensor's, as ROUND says */
	struct isth_island_range rg; /* the host's part: send() and result() */
	int busy; /* calls in progress (GIL held to change) */
} Session;

static int
parse_addr(PyObject *o, uint32_t *ip, uint16_t *port, const char *what)
{
	const char *host;
	struct in_addr a;
	int p;

	if (!PyArg_ParseTuple(o, "si", &host, &p)) {
		PyErr_Format(PyExc_TypeError, "%s must be a (host, port) tuple", what);
		return -1;
	}
	if (inet_pton(AF_INET, host, &a) != 1) {
		PyErr_Format(PyExc_ValueError, "%s: '%s' is not an IPv4 address", what, host);
		return -1;
	}
	if (p < 0 || p > 65535) {
		PyErr_Format(PyExc_ValueError, "%s: port %d out of range", what, p);
		return -1;
	}
	*ip = ntohl(a.s_addr);
	*port = (uint16_t)p;
	return 0;
}

/* Session(dtype=...): "fp32", "bf16" or "int32". */
static int
conf_dtype(struct isth_island_conf *c, const char *dtype)
{
	if (strcmp(dtype, "fp32") == 0)
		c->dtype = ISTH_WIRE_DTYPE_FP32;
	else if (strcmp(dtype, "bf16") == 0)
		c->dtype = ISTH_WIRE_DTYPE_BF16;
	else if (strcmp(dtype, "int32") == 0)
		c->dtype = ISTH_WIRE_DTYPE_INT32;
	else {
		PyErr_Format(PyExc_ValueError, "dtype '%s' is not fp32, bf16 or int32", dtype);
		return -1;
	}
	return 0;
}

/* Session(nack_interval=, grace=, probe=), in seconds, into ns. */
static int
conf_timers(struct isth_island_conf *c, double nack_interval, PyObject *grace_o, PyObject *probe)
{
	/* grace: None (default) is one period of each round: an edge sends
	 * AGGs up to its [agg] round_slack past the deadline */
	double grace = grace_o == Py_None ? 0.0 : PyFloat_AsDouble(grace_o);

	if (grace == -1.0 && PyErr_Occurred())
		return -1;
	if (!(nack_interval > 0) || !(grace >= 0)) {
		PyErr_SetString(
			PyExc_ValueError, "nack_interval must be > 0 and grace >= 0 seconds");
		return -1;
	}
	c->nack_interval_ns = (uint64_t)(nack_interval * 1e9);
	if (c->nack_interval_ns == 0)
		c->nack_interval_ns = 1;
	c->grace_ns = grace_o == Py_None ? ISTH_ISLAND_GRACE_PERIOD : (uint64_t)(grace * 1e9);
	/* probe: False (default, 10 ms), None (never) or seconds */
	if (probe == Py_None) {
		c->probe_ns = UINT64_MAX;
	} else if (probe != Py_False) {
		double p = PyFloat_AsDouble(probe);

		if (p == -1.0 && PyErr_Occurred())
			return -1;
		if (!(p > 0)) {
			PyErr_SetString(PyExc_ValueError, "probe must be > 0 seconds or None");
			return -1;
		}
		c->probe_ns = (uint64_t)(p * 1e9);
	}
	return 0;
}

/* Session(auth=False) has warned in this process. */
static bool auth_off_warned;

/*
 * Session(key_file=, auth=): one of them must say how the session talks
 * to its edge, because guessing wrong is silent (an edge with [auth]
 * drops every version 1 packet and the session only times out).
 * key_file: version 2; auth=False: version 1. @key_bytes holds the path.
 */
static int
conf_auth(struct isth_island_conf *c, PyObject *key_file, PyObject *auth, PyObject **key_bytes)
{
	int on = auth == Py_None ? -1 : PyObject_IsTrue(auth);

	if (auth != Py_None && on < 0)
		return -1;
	if (key_file == Py_None && on != 0) {
		PyErr_SetString(PyExc_TypeError,
			"Session() needs key_file=<the job's key file> (wire version 2, what an "
			"edge with [auth] speaks) or auth=False (wire version 1, no "
			"authentication, labs only)");
		return -1;
	}
	if (key_file != Py_None && on == 0) {
		PyErr_SetString(PyExc_ValueError,
			"Session(key_file=..., auth=False): a key file turns authentication "
			"on; give one or the other");
		return -1;
	}
	if (key_file != Py_None) {
		/* str, bytes or os.PathLike */
		if (!PyUnicode_FSConverter(key_file, key_bytes))
			return -1;
		c->key_file = PyBytes_AS_STRING(*key_bytes);
		return 0;
	}
	if (!auth_off_warned) {
		/* once per process: a lab setting, not to be missed */
		auth_off_warned = true;
		if (PyErr_WarnEx(PyExc_UserWarning,
			    "isthmus.Session(auth=False): authentication off (wire version 1); "
			    "anyone who reaches the island's port can forge aggregates. Give the "
			    "job's key file for production.",
			    1) < 0)
			return -1;
	}
	return 0;
}

/* Session(edge=, bind=): the edge is required (no address is a safe
 * guess); bind defaults to every address on the port isthmusd sends to
 * by default ([access] island_port, ISTH_WIRE_PORT). */
static int
conf_addrs(struct isth_island_conf *c, PyObject *edge, PyObject *bind)
{
	if (edge == NULL || edge == Py_None) {
		PyErr_Format(PyExc_TypeError,
			"Session() needs edge=(host, port): the edge's access address, e.g. "
			"edge=('10.10.0.1', %u) (isthmusd's [access] address and [isthmusd] "
			"udp_port, default %u)",
			ISTH_WIRE_PORT, ISTH_WIRE_PORT);
		return -1;
	}
	if (parse_addr(edge, &c->edge_ip, &c->edge_port, "edge") < 0)
		return -1;
	c->bind_port = ISTH_WIRE_PORT;
	if (bind && bind != Py_None && parse_addr(bind, &c->bind_ip, &c->bind_port, "bind") < 0)
		return -1;
	return 0;
}

static int
Session_init(Session *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"job", "island", "n_islands", "elems", "edge", "dtype", "bind",
		"mtu", "nack_interval", "nack_retries", "probe", "grace", "rcvbuf", "key_file",
		"sockets", "gso", "gro", "rx_threads", "auth", "hosts", "host", NULL};
	unsigned long job = ULONG_MAX, island = ULONG_MAX, n_islands = ULONG_MAX;
	unsigned long elems = ULONG_MAX;
	PyObject *edge = NULL, *bind = NULL, *probe = Py_False, *key_file = Py_None;
	PyObject *auth = Py_None, *grace = Py_None;
	PyObject *key_bytes = NULL;
	char err[512];
	const char *dtype = "fp32";
	double nack_interval = 0.005;
	unsigned int mtu = 1500, nack_retries = 16;
	int rcvbuf = 0, gso = 0, gro = 0, rx_threads = 0;
	unsigned int sockets = 1, hosts = 1, host = 0;
	struct isth_island_conf c;
	struct isth_island *s;

	if (self->s) {
		PyErr_SetString(PyExc_RuntimeError, "Session already initialised");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$kkkkOsOIdIOOiOIpppOII", kwlist, &job, &island,
		    &n_islands, &elems, &edge, &dtype, &bind, &mtu, &nack_interval, &nack_retries,
		    &probe, &grace, &rcvbuf, &key_file, &sockets, &gso, &gro, &rx_threads, &auth,
		    &hosts, &host))
		return -1;
	if (job == ULONG_MAX || island == ULONG_MAX || n_islands == ULONG_MAX ||
		elems == ULONG_MAX) {
		PyErr_SetString(PyExc_TypeError,
			"Session() needs the keyword arguments job, island, n_islands and elems");
		return -1;
	}
	memset(&c, 0, sizeof(c));
	if (job > UINT32_MAX || n_islands == 0 || n_islands > 64 || island >= n_islands ||
		elems == 0 || elems > UINT32_MAX / 4) {
		PyErr_Format(PyExc_ValueError,
			"need 0 <= island < n_islands <= 64, 0 < elems, job < 2^32 "
			"(got job=%lu island=%lu n_islands=%lu elems=%lu)",
			job, island, n_islands, elems);
		return -1;
	}
	c.job = (uint32_t)job;
	c.island = (uint8_t)island;
	c.n_islands = (uint32_t)n_islands;
	c.elems = (uint32_t)elems;
	if (conf_dtype(&c, dtype) < 0)
		return -1;
	if (conf_addrs(&c, edge, bind) < 0)
		return -1;
	c.mtu = mtu;
	if (conf_timers(&c, nack_interval, grace, probe) < 0)
		return -1;
	c.nack_retries = nack_retries;
	c.rcvbuf = rcvbuf;
	if (sockets == 0 || sockets > ISTH_ISLAND_MAX_SOCKETS) {
		PyErr_Format(PyExc_ValueError, "sockets must be 1..%u (got %u)",
			ISTH_ISLAND_MAX_SOCKETS, sockets);
		return -1;
	}
	c.n_sockets = sockets;
	c.gso = gso ? ISTH_ISLAND_OFFLOAD_ON : ISTH_ISLAND_OFFLOAD_OFF;
	c.gro = gro ? ISTH_ISLAND_OFFLOAD_ON : ISTH_ISLAND_OFFLOAD_OFF;
	c.rx_threads = rx_threads != 0;
	if (hosts == 0 || hosts > ISTH_ISLAND_MAX_HOSTS || host >= hosts) {
		PyErr_Format(PyExc_ValueError,
			"need 1 <= hosts <= %u and 0 <= host < hosts (got hosts=%u host=%u)",
			ISTH_ISLAND_MAX_HOSTS, hosts, host);
		return -1;
	}
	c.hosts = hosts;
	c.host = host;
	if (conf_auth(&c, key_file, auth, &key_bytes) < 0) {
		Py_XDECREF(key_bytes);
		return -1;
	}
	s = isth_island_open_err(&c, err, sizeof(err));
	Py_XDECREF(key_bytes);
	c.key_file = NULL; /* freed above; the library keeps no pointer */
	if (s == NULL && errno == EADDRINUSE) {
		char d[900];

		snprintf(d, sizeof(d),
			"%s; bind defaults to ('0.0.0.0', %u), the port isthmusd sends ROUND "
			"and AGG to ([access] island_port): one session per host and port, "
			"pass bind=(ip, port) with the port the edge names for this island",
			err, ISTH_WIRE_PORT);
		raise_errno(EADDRINUSE, "isthmus.Session", d);
		return -1;
	}
	if (s == NULL) {
		raise_errno(errno, "isthmus.Session",
			err[0] ? err
			       : (errno == EINVAL ? "a session parameter is out of range (mtu?)"
						  : NULL));
		return -1;
	}
	self->n_chunks = isth_island_n_chunks(s);
	isth_island_range(s, &self->rg);
	self->s = s;
	self->conf = c;
	return 0;
}

static void
Session_dealloc(Session *self)
{
	/* no call can be in progress: each holds a reference */
	isth_island_close(self->s);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Enter a call: the session must be open. */
static int
enter(Session *self)
{
	if (self->s == NULL) {
		raise_errno(EBADF, "isthmus.Session", "the session is closed");
		return -1;
	}
	self->busy++;
	return 0;
}

static void
leave(Session *self)
{
	self->busy--;
}

static PyObject *
Session_close(Session *self, PyObject *unused)
{
	(void)unused;
	if (self->busy) {
		return raise_errno(
			EBUSY, "close", "another thread is inside a call on this session");
	}
	isth_island_close(self->s);
	self->s = NULL;
	Py_RETURN_NONE;
}

static PyObject *
Session_enter(Session *self, PyObject *unused)
{
	(void)unused;
	if (self->s == NULL)
		return raise_errno(EBADF, "isthmus.Session", "the session is closed");
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *
Session_exit(Session *self, PyObject *args)
{
	PyObject *r;

	(void)args;
	r = Session_close(self, NULL);
	if (r == NULL)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static PyObject *
Session_wait_round(Session *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"timeout", NULL};
	struct isth_island_round ri;
	PyObject *to = NULL;
	uint64_t t;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &to))
		return NULL;
	if (to == NULL)
		t = 10 * 1000000000ull;
	else if (timeout_ns(to, &t) < 0)
		return NULL;
	if (enter(self) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS rc = isth_island_wait_round(self->s, t, &ri);
	Py_END_ALLOW_THREADS leave(self);
	if (rc == -EPROTO) {
		char d[200];

		snprintf(d, sizeof(d),
			"round %u: ROUND has %u chunks of %u elements, the session %u of %u; "
			"check elems and mtu",
			ri.round, ri.n_chunks, ri.chunk_elems, self->n_chunks,
			isth_island_chunk_elems(self->s));
		return raise_errno(EPROTO, "wait_round", d);
	}
	if (rc == -ETIMEDOUT)
		return raise_timeout(
			self->s, ETIMEDOUT, "wait_round", "no ROUND within the timeout");
	if (rc < 0)
		return raise_errno(-rc, "wait_round", NULL);
	return round_new(&ri);
}

static PyObject *
Session_send(Session *self, PyObject *args)
{
	struct tensor_mem t;
	unsigned long round;
	PyObject *arr;
	size_t elems;
	int rc;

	if (!PyArg_ParseTuple(args, "kO", &round, &arr))
		return NULL;
	if (round > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError, "round must be < 2^32");
		return NULL;
	}
	if (enter(self) < 0)
		return NULL;
	if (tensor_get(arr, false, &t, "send") < 0) {
		leave(self);
		return NULL;
	}
	elems = self->rg.n_elems; /* the host's range (hosts=) */
	/* the element type must be the session's (bf16: bf16 or float32) */
	if (!((self->conf.dtype == ISTH_WIRE_DTYPE_INT32 && t.kind == 'i') ||
		    (self->conf.dtype == ISTH_WIRE_DTYPE_FP32 && t.kind == 'f') ||
		    (self->conf.dtype == ISTH_WIRE_DTYPE_BF16 &&
			    (t.kind == 'f' || t.kind == 'b'))) ||
		t.nbytes != elems * t.itemsize) {
		PyErr_Format(PyExc_ValueError,
			"send: the session takes %zu %s elements (elem_range (%u, %u) of the "
			"%u-element tensor), got %zu bytes of '%c' (f float32, i int32, b 16-bit)",
			elems,
			self->conf.dtype == ISTH_WIRE_DTYPE_BF16
				? "bf16 or float32"
				: isth_wire_dtype_name(self->conf.dtype),
			self->rg.first_elem, self->rg.n_elems, self->conf.elems, t.nbytes, t.kind);
		tensor_release(&t);
		leave(self);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS rc = isth_island_send(self->s, (uint32_t)round, t.ptr, t.nbytes);
	Py_END_ALLOW_THREADS tensor_release(&t);
	leave(self);
	if (rc < 0) {
		const char *d = rc == -EBUSY
			? "every round slot holds a live round: take an older round's result first"
			: rc == -ESTALE   ? "round already returned or too old to keep"
			: rc == -EALREADY ? "already sent for this round"
			: rc == -EIO      ? "a datagram could not be sent (tx_errors)"
					  : NULL;

		return raise_errno(-rc, "send", d);
	}
	Py_RETURN_NONE;
}

static PyObject *
Session_result(Session *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"round", "out", "timeout", NULL};
	struct isth_island_result res;
	struct isth_island_chunk *ch;
	struct tensor_mem t;
	unsigned long round;
	PyObject *arr, *to = NULL, *r;
	uint64_t tns;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "kO|O", kwlist, &round, &arr, &to))
		return NULL;
	if (round > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError, "round must be < 2^32");
		return NULL;
	}
	if (to == NULL)
		tns = 10 * 1000000000ull;
	else if (timeout_ns(to, &tns) < 0)
		return NULL;
	if (enter(self) < 0)
		return NULL;
	if (tensor_get(arr, true, &t, "result") < 0) {
		leave(self);
		return NULL;
	}
	if (!((self->conf.dtype == ISTH_WIRE_DTYPE_INT32 && t.kind == 'i') ||
		    (self->conf.dtype != ISTH_WIRE_DTYPE_INT32 && t.kind == 'f')) ||
		t.nbytes != (size_t)self->rg.n_elems * 4) {
		PyErr_Format(PyExc_ValueError,
			"result: out must hold %u %s elements (elem_range (%u, %u)), got %zu "
			"bytes of '%c'",
			self->rg.n_elems,
			self->conf.dtype == ISTH_WIRE_DTYPE_INT32 ? "int32" : "float32",
			self->rg.first_elem, self->rg.n_elems, t.nbytes, t.kind);
		tensor_release(&t);
		leave(self);
		return NULL;
	}
	/* per call: two threads may wait for results at once */
	ch = PyMem_RawCalloc(self->rg.n_chunks, sizeof(*ch));
	if (ch == NULL) {
		tensor_release(&t);
		leave(self);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS rc = isth_island_result(
		self->s, (uint32_t)round, t.ptr, t.nbytes, ch, self->rg.n_chunks, &res, tns);
	Py_END_ALLOW_THREADS tensor_release(&t);
	leave(self);
	if (rc == -ENOENT)
		r = raise_timeout(
			self->s, ENOENT, "result", "no ROUND for this round within the timeout");
	else if (rc < 0 && rc != -ETIMEDOUT)
		r = raise_errno(-rc, "result",
			rc == -ESTALE ? "round no longer kept (its slot was reused)" : NULL);
	else
		r = result_new(&res, ch, self->rg.n_chunks, self->rg.first_chunk);
	PyMem_RawFree(ch);
	return r;
}

static PyObject *
Session_ready(Session *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"round", "timeout", NULL};
	unsigned long round;
	PyObject *to = NULL;
	uint64_t t = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "k|O", kwlist, &round, &to))
		return NULL;
	if (round > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError, "round must be < 2^32");
		return NULL;
	}
	if (to && timeout_ns(to, &t) < 0)
		return NULL;
	if (enter(self) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS rc = isth_island_ready(self->s, (uint32_t)round, t);
	Py_END_ALLOW_THREADS leave(self);
	if (rc == 0)
		Py_RETURN_TRUE;
	if (rc == -EAGAIN)
		Py_RETURN_FALSE;
	return raise_errno(
		-rc, "ready", rc == -ESTALE ? "round no longer kept (its slot was reused)" : NULL);
}

static PyObject *
Session_poll(Session *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"timeout", NULL};
	PyObject *to = NULL;
	uint64_t t = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &to))
		return NULL;
	if (to && timeout_ns(to, &t) < 0)
		return NULL;
	if (enter(self) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS rc = isth_island_poll(self->s, t);
	Py_END_ALLOW_THREADS leave(self);
	if (rc < 0)
		return raise_errno(-rc, "poll", NULL);
	return PyLong_FromLong(rc);
}

static PyObject *
Session_reload_keys(Session *self, PyObject *arg)
{
	PyObject *path = NULL;
	char err[512];
	int rc;

	if (!PyUnicode_FSConverter(arg, &path))
		return NULL;
	if (enter(self) < 0) {
		Py_DECREF(path);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS rc =
		isth_island_reload_keys(self->s, PyBytes_AS_STRING(path), err, sizeof(err));
	Py_END_ALLOW_THREADS leave(self);
	Py_DECREF(path);
	if (rc < 0)
		return raise_errno(-rc, "reload_keys", err[0] ? err : NULL);
	Py_RETURN_NONE;
}

static int
put(PyObject *d, const char *k, uint64_t v)
{
	PyObject *o = PyLong_FromUnsignedLongLong(v);
	int rc;

	if (o == NULL)
		return -1;
	rc = PyDict_SetItemString(d, k, o);
	Py_DECREF(o);
	return rc;
}

static PyObject *
Session_counters(Session *self, PyObject *unused)
{
	struct isth_island_stats st;
	PyObject *d;
	char k[96];
	unsigned int i;

	(void)unused;
	if (enter(self) < 0)
		return NULL;
	isth_island_stats(self->s, &st); /* short lock, no I/O */
	leave(self);
	d = PyDict_New();
	if (d == NULL)
		return NULL;
		/* the keys are the library's lists (isth_island.h): a counter or
	 * state field added there is a key here, with nothing to re-list */
#define PUT_COUNTER(f, help) \
	if (put(d, #f, st.f) < 0) \
		goto fail;
#define PUT_STATE(type, f, help) PUT_COUNTER(f, help)
	ISTH_ISLAND_COUNTERS(PUT_COUNTER)
	ISTH_ISLAND_STATE(PUT_STATE)
#undef PUT_STATE
#undef PUT_COUNTER
	for (i = 1; i < ISTH_AUTH_STATUS_MAX; i++)
		if (put(d, isth_auth_status_name(i), st.auth_drop[i]) < 0)
			goto fail;
	for (i = 1; i <= ISTH_WIRE_TYPE_MAX; i++) {
		snprintf(k, sizeof(k), "rx_%s", isth_wire_type_name(i));
		if (put(d, k, st.rx_type[i]) < 0)
			goto fail;
	}
	for (i = 1; i < ISTH_WIRE_REASON_MAX; i++) {
		snprintf(k, sizeof(k), "wire_drop_%s", isth_wire_reason_name(i));
		if (put(d, k, st.wire_drop[i]) < 0)
			goto fail;
	}
	for (i = 0; i < ISTH_ISLAND_DROP_MAX; i++) {
		snprintf(k, sizeof(k), "drop_%s", isth_island_drop_name(i));
		if (put(d, k, st.drop[i]) < 0)
			goto fail;
	}
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

static PyObject *
get_closed(Session *self, void *c)
{
	(void)c;
	return PyBool_FromLong(self->s == NULL);
}

static PyObject *
get_local_port(Session *self, void *c)
{
	(void)c;
	return PyLong_FromLong(self->s ? isth_island_local_port(self->s) : 0);
}

static PyObject *
get_chunk_elems(Session *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->s ? isth_island_chunk_elems(self->s) : 0);
}

static PyObject *
get_n_chunks(Session *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->n_chunks);
}

static PyObject *
get_dtype(Session *self, void *c)
{
	(void)c;
	return PyUnicode_FromString(isth_wire_dtype_name(self->conf.dtype));
}

static PyObject *
get_elems(Session *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->conf.elems);
}

static PyObject *
get_elem_range(Session *self, void *c)
{
	(void)c;
	return Py_BuildValue(
		"(kk)", (unsigned long)self->rg.first_elem, (unsigned long)self->rg.n_elems);
}

static PyObject *
get_chunk_range(Session *self, void *c)
{
	(void)c;
	return Py_BuildValue(
		"(kk)", (unsigned long)self->rg.first_chunk, (unsigned long)self->rg.n_chunks);
}

static PyObject *
get_hosts(Session *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->conf.hosts);
}

static PyObject *
get_host(Session *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->conf.host);
}

static PyObject *
get_island(Session *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->conf.island);
}

static PyObject *
get_n_islands(Session *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->conf.n_islands);
}

static PyGetSetDef Session_getset[] = {
	{"closed", (getter)(void (*)(void))get_closed, NULL, "True after close()", NULL},
	{"local_port", (getter)(void (*)(void))get_local_port, NULL,
		"UDP port the session is bound to", NULL},
	{"chunk_elems", (getter)(void (*)(void))get_chunk_elems, NULL, "elements per full chunk",
		NULL},
	{"n_chunks", (getter)(void (*)(void))get_n_chunks, NULL,
		"chunks per tensor (the whole tensor's, as every ROUND says)", NULL},
	{"elem_range", (getter)(void (*)(void))get_elem_range, NULL,
		"(first, count): the tensor's elements this host owns; send() takes and "
		"result() writes those count elements ((0, elems) with hosts=1)",
		NULL},
	{"chunk_range", (getter)(void (*)(void))get_chunk_range, NULL,
		"(first, count): the chunk ids this host owns; Result.chunk_bitmaps has count "
		"entries, the first for chunk id first",
		NULL},
	{"hosts", (getter)(void (*)(void))get_hosts, NULL, "hosts of the island (hosts=)", NULL},
	{"host", (getter)(void (*)(void))get_host, NULL, "this session's host (host=)", NULL},
	{"dtype", (getter)(void (*)(void))get_dtype, NULL, "'fp32', 'bf16' or 'int32'", NULL},
	{"elems", (getter)(void (*)(void))get_elems, NULL, "elements in the tensor", NULL},
	{"island", (getter)(void (*)(void))get_island, NULL, "own island id", NULL},
	{"n_islands", (getter)(void (*)(void))get_n_islands, NULL, "islands in the job", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Session_methods[] = {
	{"wait_round", (PyCFunction)(void (*)(void))Session_wait_round,
		METH_VARARGS | METH_KEYWORDS,
		"wait_round(timeout=10.0) -> Round\n\nThe next announced round (each once, in "
		"increasing order). Raises Timeout, or Error(EPROTO) for a ROUND of the wrong "
		"shape."},
	{"send", (PyCFunction)(void (*)(void))Session_send, METH_VARARGS,
		"send(round, array)\n\nSend the island's contribution (elem_range's count "
		"elements, "
		"all elems with hosts=1: float32 for "
		"fp32, int32 for int32, bfloat16/uint16 words or float32 (rounded) for bf16). "
		"The array is read in place and may be reused on return."},
	{"result", (PyCFunction)(void (*)(void))Session_result, METH_VARARGS | METH_KEYWORDS,
		"result(round, out, timeout=10.0) -> Result\n\nWait for the round's end and write "
		"its sum into out (elem_range's count float32, or int32) in place. A partial round "
		"is a Result "
		"with complete False, not an exception. timeout bounds the wait for the ROUND."},
	{"ready", (PyCFunction)(void (*)(void))Session_ready, METH_VARARGS | METH_KEYWORDS,
		"ready(round, timeout=0) -> bool\n\nTrue once the round has ended (result() then "
		"answers at once)."},
	{"poll", (PyCFunction)(void (*)(void))Session_poll, METH_VARARGS | METH_KEYWORDS,
		"poll(timeout=0) -> int\n\nProcess packets and timers; returns packets read."},
	{"reload_keys", (PyCFunction)(void (*)(void))Session_reload_keys, METH_O,
		"reload_keys(path)\n\nLoad the job's key file again for a key rotation "
		"(isth_island_reload_keys(): every round in progress must keep its key; append "
		"the next epoch with a start round not reached yet)."},
	{"counters", (PyCFunction)(void (*)(void))Session_counters, METH_NOARGS,
		"counters() -> dict\n\nThe session's counters (doc/island.md)."},
	{"close", (PyCFunction)(void (*)(void))Session_close, METH_NOARGS,
		"close()\n\nClose the socket. Refused (EBUSY) while another thread is in a call."},
	{"__enter__", (PyCFunction)(void (*)(void))Session_enter, METH_NOARGS, NULL},
	{"__exit__", (PyCFunction)(void (*)(void))Session_exit, METH_VARARGS, NULL},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject SessionType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "isthmus.Session",
	.tp_basicsize = sizeof(Session),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Session(*, job, island, n_islands, elems, edge, key_file | auth=False, "
		  "dtype='fp32', bind=('0.0.0.0', 9471), mtu=1500, nack_interval=0.005, "
		  "nack_retries=16, probe=<10 ms>|None|seconds, grace=<one period>|seconds, "
		  "rcvbuf=0, "
		  "sockets=1, gso=False, gro=False, rx_threads=False, hosts=1, host=0)\n\n"
		  "One island's session with its edge (libisthmus). edge: (host, port), "
		  "the edge's access address (required). key_file: the job's key "
		  "file (mode 0600): wire version 2, every packet authenticated; or "
		  "auth=False: authentication off (version 1, labs only; warns once); one "
		  "of them is required. bind: the local address; the default port is "
		  "isthmusd's default [access] island_port (DEFAULT_PORT), where the edge "
		  "sends ROUND and AGG. grace: seconds past a round's deadline to keep "
		  "collecting; by default one period of the round, as an edge sends AGGs "
		  "up to its [agg] round_slack late. A Timeout says what arrived "
		  "instead, if anything (another source, wire version, key, job or "
		  "island). sockets: UDP "
		  "sockets and sending threads, each sending a contiguous chunk range "
		  "(socket i on bind port + i). gso/gro: UDP segmentation offload on send, "
		  "receive offload on receive, with a fallback to plain datagrams when the "
		  "kernel refuses (counters gso_refused, gro_refused). rx_threads: a receive "
		  "thread per socket; socket k % sockets reads AGG stream k, which the edge "
		  "sends there when its [access] island_sockets equals sockets (others are "
		  "dropped as agg_socket). hosts/host: an island of hosts processes, this "
		  "one host host: it owns the chunk ids [floor(host*C/hosts), "
		  "floor((host+1)*C/hosts)) of every round of C = n_chunks chunks, and "
		  "send() takes and result() writes that range's elements, elem_range = "
		  "(first, count) of the elems-element tensor (elems stays the whole "
		  "tensor's).",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)(void (*)(void))Session_init,
	.tp_dealloc = (destructor)(void (*)(void))Session_dealloc,
	.tp_methods = Session_methods,
	.tp_getset = Session_getset,
};

/* ---- module ----------------------------------------------------------- */

static PyObject *
mod_bf16_round(PyObject *m, PyObject *arg)
{
	/* Round a float to bf16 as the library does, for tests and users. */
	double d = PyFloat_AsDouble(arg);
	float f = (float)d;
	uint32_t u;

	(void)m;
	if (d == -1.0 && PyErr_Occurred())
		return NULL;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		u = ((u >> 16) | 0x40) << 16;
	else
		u = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
	memcpy(&f, &u, 4);
	return PyFloat_FromDouble(f);
}

static PyMethodDef mod_methods[] = {
	{"bf16_round", mod_bf16_round, METH_O,
		"bf16_round(x) -> float: x rounded to bfloat16 (nearest, ties to even) as send() "
		"does"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef mod_def = {
	PyModuleDef_HEAD_INIT,
	"isthmus._isthmus",
	"libisthmus binding; use the isthmus package.",
	-1,
	mod_methods,
	NULL,
	NULL,
	NULL,
	NULL,
};

PyMODINIT_FUNC PyInit__isthmus(void);
PyMODINIT_FUNC
PyInit__isthmus(void)
{
	PyObject *m, *bases;

	if (PyType_Ready(&SessionType) < 0)
		return NULL;
	if (RoundType.tp_name == NULL &&
		(PyStructSequence_InitType2(&RoundType, &round_desc) < 0 ||
			PyStructSequence_InitType2(&ResultType, &result_desc) < 0))
		return NULL;
	m = PyModule_Create(&mod_def);
	if (m == NULL)
		return NULL;
	IsthError = PyErr_NewExceptionWithDoc("isthmus.Error",
		"An isthmus call failed: errno and the library's reason.", PyExc_OSError, NULL);
	bases = Py_BuildValue("(OO)", IsthError, PyExc_TimeoutError);
	IsthTimeout = bases ? PyErr_NewExceptionWithDoc("isthmus.Timeout",
				      "Nothing came within the timeout (no ROUND).", bases, NULL)
			    : NULL;
	Py_XDECREF(bases);
	if (IsthError == NULL || IsthTimeout == NULL)
		goto fail;
	Py_INCREF(&SessionType);
	Py_INCREF(&RoundType);
	Py_INCREF(&ResultType);
	Py_INCREF(IsthError);
	Py_INCREF(IsthTimeout);
	if (PyModule_AddObject(m, "Session", (PyObject *)&SessionType) < 0 ||
		PyModule_AddObject(m, "Round", (PyObject *)&RoundType) < 0 ||
		PyModule_AddObject(m, "Result", (PyObject *)&ResultType) < 0 ||
		PyModule_AddObject(m, "Error", IsthError) < 0 ||
		PyModule_AddObject(m, "Timeout", IsthTimeout) < 0 ||
		PyModule_AddIntConstant(m, "ROUNDS_KEPT", ISTH_ISLAND_ROUNDS) < 0 ||
		PyModule_AddIntConstant(m, "DEFAULT_PORT", ISTH_WIRE_PORT) < 0 ||
		PyModule_AddStringConstant(m, "VERSION", ISTH_VERSION) < 0)
		goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
