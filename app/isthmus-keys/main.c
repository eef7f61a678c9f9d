/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-keys: the job's key files (doc/protocol.md, "Keys"). The
 * operator keeps the job file (master keys); every island and every edge
 * gets a site file that holds only the keys derived for it, so that no
 * site can seal as another. Key bytes go to files (mode 0600, written to
 * a temporary file and renamed over the target), never to the terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "isth_auth.h"
#include "isth_text.h"
#include "isth_version.h"

#define EXIT_USAGE 1
#define EXIT_FILE 2
/* an edge's file of 64 islands and 4 epochs (126 pairwise keys per
 * epoch, about 85 bytes each) is about 44 KB */
#define TEXT_MAX (128u * 1024u)

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: isthmus-keys generate --job J --out FILE [--epoch E] [--force]\n"
		"       isthmus-keys split --job-file FILE --n-islands N --out DIR\n"
		"       isthmus-keys rotate --job-file FILE --from-round R [--retire-oldest]\n"
		"       isthmus-keys show --key-file FILE\n"
		"       isthmus-keys --help | --version\n"
		"\n"
		"Writes the key files of an isthmus job (doc/protocol.md, \"Keys\";\n"
		"threat model in doc/security.md). The hierarchy:\n"
		"\n"
		"  job file (operator only)  per epoch a 256-bit master key M_e. Every key\n"
		"                            of the job derives from it (HKDF-SHA256): keep\n"
		"                            it off the sites; whoever holds it can seal as\n"
		"                            any site.\n"
		"  island-<i>.key            island i (isthmus-island --key-file, Python\n"
		"                            Session(key_file=...)): per epoch K(UP, i),\n"
		"                            which it seals DATA with, and K(DOWN, i), which\n"
		"                            its edge's AGG and ROUND are sealed with.\n"
		"  edge-<i>.key              isthmusd of island i ([auth] key_file): UP i\n"
		"                            and DOWN i, and the pairwise WAN keys\n"
		"                            K(WAN_PAIR, i, t), with which it seals a tag\n"
		"                            per peer t, and K(WAN_PAIR, s, i), with which\n"
		"                            it verifies its own tag in peer s's frames.\n"
		"\n"
		"So island 1's file cannot seal as island 0, on the access link or on the\n"
		"WAN (it holds no WAN key), and edge 1's file cannot produce a tag that\n"
		"edge 2 accepts as edge 0's: it lacks K(WAN_PAIR, 0, 2) (doc/security.md).\n"
		"\n"
		"Commands:\n"
		"  generate   a new job file: one epoch (id --epoch, default 0) from round 0\n"
		"             with a master key from getrandom(2). Refuses to replace an\n"
		"             existing file unless --force (a lost master key is a lost job).\n"
		"  split      from the job file, write island-<i>.key and edge-<i>.key for\n"
		"             i = 0..N-1 into DIR (created 0700 if missing), each 0600,\n"
		"             each renamed into place whole. Give each site only its file.\n"
		"  rotate     add an epoch (a fresh master key) to the job file, starting\n"
		"             at round R (above every epoch's start); the file keeps at most\n"
		"             %u epochs: with that many, the oldest must be retired, which\n"
		"             needs --retire-oldest (safe once the second epoch's round has\n"
		"             begun everywhere; said on stdout). Then run\n"
		"             split again, hand out the files and reload every site before\n"
		"             round R (isthmusd: SIGHUP; doc/isthmusd.md, doc/island.md).\n"
		"  show       what a key file holds: kind, site, job, epochs, key names\n"
		"             (never key bytes).\n"
		"\n"
		"Exit status: 0 done, 1 usage, 2 a file could not be read or written.\n",
		ISTH_AUTH_MAX_EPOCHS);
}

/* ---- output ------------------------------------------------------------ */

struct out {
	char *buf; /* TEXT_MAX bytes, wiped before it is freed */
	size_t len;
	bool full;
};

static void __attribute__((format(printf, 2, 3))) out_add(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, TEXT_MAX - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= TEXT_MAX - o->len)
		o->full = true;
	else
		o->len += (size_t)n;
}

static void
out_key(struct out *o, const char *what, const uint8_t k[ISTH_AUTH_KEY_SIZE])
{
	char hex[2 * ISTH_AUTH_KEY_SIZE + 1];

	for (unsigned int i = 0; i < ISTH_AUTH_KEY_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", k[i]);
	out_add(o, "%s %s\n", what, hex);
	OPENSSL_cleanse(hex, sizeof(hex));
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * @path := the text of @o, mode 0600: written to a temporary file beside
 * it (created 0600 before a byte is written), synced, renamed over it (or,
 * without @replace, linked to it), so a reader sees the old file or the
 * new one, never half of one.
 */
/* fsync the directory holding @path (after a rename or link into it) */
static int
sync_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, rc = 0;

	if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (slash == NULL)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int
write_file(const char *path, const struct out *o, bool replace)
{
	char tmp[PATH_MAX];
	int fd, rc;

	if (o->full) {
		fprintf(stderr, "isthmus-keys: %s: text too long\n", path);
		return -EFBIG;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		fprintf(stderr, "isthmus-keys: cannot create %s: %s\n", tmp, strerror(-rc));
		return rc;
	}
	rc = fchmod(fd, 0600) != 0 ? -errno : 0;
	if (rc == 0)
		rc = write_all(fd, o->buf, o->len);
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	/* without replace, link() refuses an existing target atomically
	 * (no window between a check and the write) */
	if (rc == 0 && (replace ? rename(tmp, path) : link(tmp, path)) != 0)
		rc = -errno;
	/* the new name itself must survive a crash: sync its directory, or
	 * a job file and its site files may come back with other epochs */
	if (rc == 0)
		rc = sync_dir(path);
	if (rc != 0 || !replace)
		unlink(tmp);
	if (rc == -EEXIST)
		fprintf(stderr, "isthmus-keys: %s exists; refused (--force replaces it)\n", path);
	else if (rc != 0)
		fprintf(stderr, "isthmus-keys: cannot write %s: %s\n", path, strerror(-rc));
	return rc;
}

static int
random_key(uint8_t k[ISTH_AUTH_KEY_SIZE])
{
	size_t got = 0;

	while (got < ISTH_AUTH_KEY_SIZE) {
		ssize_t n = getrandom(k + got, ISTH_AUTH_KEY_SIZE - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "isthmus-keys: getrandom: %s\n", strerror(errno));
			return -errno;
		}
		got += (size_t)n;
	}
	return 0;
}

/* ---- the job file ------------------------------------------------------ */

static void
job_text(struct out *o, const struct isth_auth_file *f)
{
	out_add(o,
		"# isthmus job key file (isthmus-keys; doc/protocol.md, \"Keys\"): master\n"
		"# keys, for the operator only; sites get the files of 'isthmus-keys split'\n");
	out_add(o, "job %u\n", f->job);
	for (unsigned int i = 0; i < f->n_epochs; i++) {
		char what[64];

		snprintf(what, sizeof(what), "epoch %u round %u key", f->ep[i].id, f->ep[i].start);
		out_key(o, what, f->ep[i].master);
	}
}

/* Read @path, which must be a job file (not a site's). */
static int
read_job(const char *path, struct isth_auth_file *f)
{
	char err[512];
	int rc = isth_auth_file_read(path, f, err, sizeof(err));

	if (rc != 0) {
		fprintf(stderr, "isthmus-keys: %s\n", err);
		return rc;
	}
	if (f->site != ISTH_AUTH_SITE_JOB) {
		fprintf(stderr, "isthmus-keys: %s: the key file of %s %u, not a job file\n", path,
			isth_auth_site_name(f->site), f->site_id);
		isth_auth_file_wipe(f);
		return -EINVAL;
	}
	return 0;
}

/* ---- site files --------------------------------------------------------- */

/* The site file of (@kind, @i) of a job of @n islands into @o. */
static int
site_text(struct out *o, const struct isth_auth_file *f, enum isth_auth_site kind, unsigned int i,
	unsigned int n)
{
	uint8_t k[ISTH_AUTH_KEY_SIZE];
	int rc = 0;

	out_add(o,
		"# isthmus key file of %s %u, job %u (isthmus-keys split): this site's\n"
		"# keys only; mode 0600, for this site's process alone\n",
		isth_auth_site_name(kind), i, f->job);
	out_add(o, "job %u\nsite %s %u\n", f->job, isth_auth_site_name(kind), i);
	for (unsigned int e = 0; e < f->n_epochs && rc == 0; e++) {
		const struct isth_auth_file_epoch *ep = &f->ep[e];

		out_add(o, "epoch %u round %u\n", ep->id, ep->start);
		rc = isth_auth_derive(ep->master, f->job, ep->id, ISTH_AUTH_UP, i, k);
		if (rc == 0)
			out_key(o, "key up", k);
		if (rc == 0)
			rc = isth_auth_derive(ep->master, f->job, ep->id, ISTH_AUTH_DOWN, i, k);
		if (rc == 0)
			out_key(o, "key down", k);
		/* the pairs from this edge (sealing) and to it (verifying) */
		for (unsigned int t = 0; kind == ISTH_AUTH_SITE_EDGE && t < n && rc == 0; t++)
			for (unsigned int dir = 0; dir < 2 && t != i && rc == 0; dir++) {
				unsigned int snd = dir == 0 ? i : t, rcv = dir == 0 ? t : i;
				char what[32];

				rc = isth_auth_derive_pair(ep->master, f->job, ep->id, snd, rcv, k);
				snprintf(what, sizeof(what), "key pair %u %u", snd, rcv);
				if (rc == 0)
					out_key(o, what, k);
			}
	}
	OPENSSL_cleanse(k, sizeof(k));
	return rc;
}

static int
split_write(const struct isth_auth_file *f, const char *dir, unsigned int n, struct out *o)
{
	static const enum isth_auth_site kinds[2] = {ISTH_AUTH_SITE_ISLAND, ISTH_AUTH_SITE_EDGE};
	char path[PATH_MAX];
	int rc = 0;

	for (unsigned int i = 0; i < n && rc == 0; i++)
		for (unsigned int j = 0; j < 2 && rc == 0; j++) {
			OPENSSL_cleanse(o->buf, TEXT_MAX);
			o->len = 0;
			o->full = false;
			if ((size_t)snprintf(path, sizeof(path), "%s/%s-%u.key", dir,
				    isth_auth_site_name(kinds[j]), i) >= sizeof(path))
				return -ENAMETOOLONG;
			rc = site_text(o, f, kinds[j], i, n);
			if (rc == 0)
				rc = write_file(path, o, true);
		}
	return rc;
}

/* ---- commands ------------------------------------------------------------ */

struct args {
	const char *cmd, *out, *job_file, *key_file;
	uint64_t job, epoch, n_islands, from_round;
	bool have_job, have_n, have_round, force, retire_oldest;
};

static int
cmd_generate(const struct args *a, struct isth_auth_file *f, struct out *o)
{
	int rc;

	if (!a->have_job || a->out == NULL) {
		fprintf(stderr, "isthmus-keys generate: --job and --out are required\n");
		return EXIT_USAGE;
	}
	f->job = (uint32_t)a->job;
	f->n_epochs = 1;
	f->ep[0].id = (uint8_t)a->epoch;
	f->ep[0].start = 0;
	if (random_key(f->ep[0].master) != 0)
		return EXIT_FILE;
	job_text(o, f);
	rc = write_file(a->out, o, a->force);
	if (rc != 0)
		return EXIT_FILE;
	printf("isthmus-keys: %s: job %u, epoch %u from round 0 (a new master key)\n", a->out,
		f->job, f->ep[0].id);
	return 0;
}

static int
cmd_split(const struct args *a, struct isth_auth_file *f, struct out *o)
{
	if (a->job_file == NULL || a->out == NULL || !a->have_n) {
		fprintf(stderr,
			"isthmus-keys split: --job-file, --n-islands and --out are "
			"required\n");
		return EXIT_USAGE;
	}
	if (read_job(a->job_file, f) != 0)
		return EXIT_FILE;
	if (mkdir(a->out, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "isthmus-keys: cannot create %s: %s\n", a->out, strerror(errno));
		return EXIT_FILE;
	}
	if (split_write(f, a->out, (unsigned int)a->n_islands, o) != 0)
		return EXIT_FILE;
	printf("isthmus-keys: %s: island-<i>.key and edge-<i>.key for i = 0..%u, job %u, "
	       "%u epochs\n",
		a->out, (unsigned int)a->n_islands - 1, f->job, f->n_epochs);
	return 0;
}

/* An epoch id after the newest that no kept epoch uses. */
static uint8_t
next_epoch_id(const struct isth_auth_file *f)
{
	uint8_t id = f->ep[f->n_epochs - 1].id;

	for (;;) {
		bool used = false;

		id = (uint8_t)(id + 1);
		for (unsigned int i = 0; i < f->n_epochs; i++)
			used |= f->ep[i].id == id;
		if (!used)
			return id;
	}
}

static int
cmd_rotate(const struct args *a, struct isth_auth_file *f, struct out *o)
{
	struct isth_auth_file_epoch *ep;
	uint32_t last;

	if (a->job_file == NULL || !a->have_round) {
		fprintf(stderr, "isthmus-keys rotate: --job-file and --from-round are required\n");
		return EXIT_USAGE;
	}
	if (read_job(a->job_file, f) != 0)
		return EXIT_FILE;
	last = f->ep[f->n_epochs - 1].start;
	if (a->from_round <= last) {
		fprintf(stderr,
			"isthmus-keys rotate: --from-round %llu: must be above the newest "
			"epoch's start round (%u)\n",
			(unsigned long long)a->from_round, last);
		return EXIT_USAGE;
	}
	/* the oldest epoch may still be the one in use (three future ones
	 * staged): dropping it then leaves the running rounds without a key
	 * (auth_epoch everywhere). Only the operator knows the round now. */
	if (f->n_epochs == ISTH_AUTH_MAX_EPOCHS && !a->retire_oldest) {
		fprintf(stderr,
			"isthmus-keys rotate: the file holds %u epochs, the most it may; adding "
			"one retires epoch %u (rounds %u..%u), which is safe only once round %u "
			"has begun at every site: then pass --retire-oldest\n",
			ISTH_AUTH_MAX_EPOCHS, f->ep[0].id, f->ep[0].start, f->ep[1].start - 1,
			f->ep[1].start);
		return EXIT_USAGE;
	}
	if (f->n_epochs == ISTH_AUTH_MAX_EPOCHS) {
		printf("isthmus-keys: retired epoch %u (from round %u): the file keeps at most "
		       "%u epochs\n",
			f->ep[0].id, f->ep[0].start, ISTH_AUTH_MAX_EPOCHS);
		memmove(&f->ep[0], &f->ep[1], (f->n_epochs - 1) * sizeof(f->ep[0]));
		f->n_epochs--;
	}
	ep = &f->ep[f->n_epochs];
	memset(ep, 0, sizeof(*ep));
	ep->id = next_epoch_id(f);
	ep->start = (uint32_t)a->from_round;
	if (random_key(ep->master) != 0)
		return EXIT_FILE;
	f->n_epochs++;
	job_text(o, f);
	if (write_file(a->job_file, o, true) != 0)
		return EXIT_FILE;
	printf("isthmus-keys: %s: added epoch %u from round %u (%u epochs); now run split "
	       "and reload every site before round %u\n",
		a->job_file, ep->id, ep->start, f->n_epochs, ep->start);
	return 0;
}

static int
cmd_show(const struct args *a, struct isth_auth_file *f)
{
	char err[512];

	if (a->key_file == NULL) {
		fprintf(stderr, "isthmus-keys show: --key-file is required\n");
		return EXIT_USAGE;
	}
	if (isth_auth_file_read(a->key_file, f, err, sizeof(err)) != 0) {
		fprintf(stderr, "isthmus-keys: %s\n", err);
		return EXIT_FILE;
	}
	printf("file %s\njob %u\nkind %s", a->key_file, f->job, isth_auth_site_name(f->site));
	if (f->site != ISTH_AUTH_SITE_JOB)
		printf(" %u", f->site_id);
	printf("\n");
	for (unsigned int i = 0; i < f->n_epochs; i++) {
		const struct isth_auth_file_epoch *ep = &f->ep[i];

		printf("epoch %u round %u:", ep->id, ep->start);
		if (f->site == ISTH_AUTH_SITE_JOB)
			printf(" master");
		if (ep->have[0])
			printf(" up");
		if (ep->have[1])
			printf(" down");
		for (unsigned int s = 0; s < ISTH_AUTH_MAX_ISLANDS; s++)
			if ((ep->have[2] >> s) & 1u)
				printf(" wan%u", s);
		for (unsigned int t = 0; t < ISTH_AUTH_MAX_ISLANDS; t++)
			if ((ep->pair_out >> t) & 1u)
				printf(" pair%u-%u", f->site_id, t);
		for (unsigned int t = 0; t < ISTH_AUTH_MAX_ISLANDS; t++)
			if ((ep->pair_in >> t) & 1u)
				printf(" pair%u-%u", t, f->site_id);
		printf("\n");
	}
	return 0;
}

/* ---- options ------------------------------------------------------------- */

static int
num_arg(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (isth_text_parse_u64_range(v, lo, hi, out) != 0) {
		fprintf(stderr, "isthmus-keys: %s: expected a number %llu..%llu, got '%s'\n", opt,
			(unsigned long long)lo, (unsigned long long)hi, v);
		return -EINVAL;
	}
	return 0;
}

static int
parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{"job", required_argument, NULL, 'j'},
		{"out", required_argument, NULL, 'o'},
		{"epoch", required_argument, NULL, 'e'},
		{"force", no_argument, NULL, 'f'},
		{"job-file", required_argument, NULL, 'J'},
		{"key-file", required_argument, NULL, 'k'},
		{"n-islands", required_argument, NULL, 'n'},
		{"from-round", required_argument, NULL, 'r'},
		{"retire-oldest", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	while (rc == 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			rc = num_arg("--job", optarg, 0, UINT32_MAX, &a->job);
			a->have_job = true;
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'e':
			rc = num_arg("--epoch", optarg, 0, 255, &a->epoch);
			break;
		case 'f':
			a->force = true;
			break;
		case 'R':
			a->retire_oldest = true;
			break;
		case 'J':
			a->job_file = optarg;
			break;
		case 'k':
			a->key_file = optarg;
			break;
		case 'n':
			rc = num_arg(
				"--n-islands", optarg, 1, ISTH_AUTH_MAX_ISLANDS, &a->n_islands);
			a->have_n = true;
			break;
		case 'r':
			rc = num_arg("--from-round", optarg, 1, UINT32_MAX, &a->from_round);
			a->have_round = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (rc == 0 && optind != argc) {
		fprintf(stderr, "isthmus-keys: unexpected argument '%s'\n", argv[optind]);
		rc = -EINVAL;
	}
	return rc;
}

int
main(int argc, char **argv)
{
	struct args a = {0};
	struct isth_auth_file *f;
	struct out o = {0};
	int rc = EXIT_USAGE;

	if (isth_version_args("isthmus-keys", argc, argv))
		return 0;
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return EXIT_USAGE;
	}
	a.cmd = argv[1];
	if (parse_args(argc - 1, argv + 1, &a) != 0) {
		fprintf(stderr, "isthmus-keys: see --help\n");
		return EXIT_USAGE;
	}
	f = calloc(1, sizeof(*f));
	o.buf = calloc(1, TEXT_MAX);
	if (f == NULL || o.buf == NULL) {
		fprintf(stderr, "isthmus-keys: out of memory\n");
		rc = EXIT_FILE;
	} else if (strcmp(a.cmd, "generate") == 0) {
		rc = cmd_generate(&a, f, &o);
	} else if (strcmp(a.cmd, "split") == 0) {
		rc = cmd_split(&a, f, &o);
	} else if (strcmp(a.cmd, "rotate") == 0) {
		rc = cmd_rotate(&a, f, &o);
	} else if (strcmp(a.cmd, "show") == 0) {
		rc = cmd_show(&a, f);
	} else {
		fprintf(stderr, "isthmus-keys: unknown command '%s' (see --help)\n", a.cmd);
	}
	if (f != NULL)
		isth_auth_file_wipe(f);
	free(f);
	if (o.buf != NULL)
		OPENSSL_cleanse(o.buf, TEXT_MAX);
	free(o.buf);
	return rc;
}
