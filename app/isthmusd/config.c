/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration loading: every key is read through lib/conf, so every
 * error carries file, line and key, and unknown keys are refused.
 * EAL-free, so tests/isthmusd/config_test.c runs it without DPDK.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "isth_conf.h"
#include "isth_text.h"
#include "isth_wire.h"

#include "config.h"

static int
copy_str(struct isth_conf *c, const char *sec, const char *key, bool required, const char *def,
	char *dst, size_t size)
{
	const char *v = NULL;
	int rc;

	rc = isth_conf_str(c, sec, key, required, def, &v);
	if (rc)
		return rc;
	if (v == NULL) {
		dst[0] = '\0';
		return 0;
	}
	if (strlen(v) >= size)
		return isth_conf_fail(c, sec, key, "longer than %zu characters", size - 1);
	strcpy(dst, v);
	return 0;
}

static int
read_port(struct isth_conf *c, const char *sec, struct isthd_port *p)
{
	int rc;

	rc = copy_str(c, sec, "port", true, NULL, p->dev, sizeof(p->dev));
	if (rc == 0)
		rc = isth_conf_ipv4(c, sec, "ip", true, 0, &p->ip);
	if (rc == 0)
		rc = isth_conf_mac(c, sec, "mac", false, NULL, p->mac);
	if (rc == 0)
		rc = copy_str(c, sec, "xdp_iface", false, NULL, p->xdp_iface, sizeof(p->xdp_iface));
	if (rc == 0)
		rc = isth_conf_bool(c, sec, "xdp_pin_sources", false, false, &p->xdp_pin_sources);
	if (rc == 0 && p->xdp_pin_sources && p->xdp_iface[0] == '\0')
		rc = isth_conf_fail(c, sec, "xdp_pin_sources",
			"needs xdp_iface (the interface running lib/xdp's program)");
	return rc;
}

/* Read one key; on error return it from the reader (the message is set). */
#define TRY(x) \
	do { \
		int rc_ = (x); \
		if (rc_) \
			return rc_; \
	} while (0)

/* Keys whose limit is a plain integer type: a u64 narrowed after the check. */
static int
conf_u32(struct isth_conf *c, const char *sec, const char *key, uint64_t def, uint64_t min,
	uint64_t max, uint32_t *out)
{
	uint64_t v;
	int rc = isth_conf_u64(c, sec, key, false, def, min, max, &v);

	if (rc == 0)
		*out = (uint32_t)v;
	return rc;
}

static int
read_isthmusd(struct isth_conf *c, struct isthd_config *cfg)
{
	static const char *const dtype_names[] = {"any", "int32", "fp32", "bf16", NULL};
	static const uint8_t dtypes[] = {ISTH_WIRE_DTYPE_NONE, ISTH_WIRE_DTYPE_INT32,
		ISTH_WIRE_DTYPE_FP32, ISTH_WIRE_DTYPE_BF16};
	const char *epoch = NULL;
	unsigned int e;
	uint64_t v;

	if (!isth_conf_has_section(c, "isthmusd"))
		return isth_conf_fail(c, "isthmusd", NULL, "section missing");
	TRY(copy_str(c, "isthmusd", "island", true, NULL, cfg->island, sizeof(cfg->island)));
	TRY(isth_conf_u64(c, "isthmusd", "job", true, 0, 0, UINT32_MAX, &v));
	cfg->job = (uint32_t)v;
	TRY(copy_str(c, "isthmusd", "schedule", false, NULL, cfg->schedule, sizeof(cfg->schedule)));
	TRY(isth_conf_str(c, "isthmusd", "epoch", false, "schedule", &epoch));
	if (strcmp(epoch, "schedule") == 0) {
		cfg->epoch_mode = ISTHD_EPOCH_SCHEDULE;
	} else {
		TRY(isth_conf_u64(c, "isthmusd", "epoch", true, 0, 1, UINT64_MAX, &cfg->epoch_ns));
		cfg->epoch_mode = ISTHD_EPOCH_FIXED;
	}
	TRY(copy_str(c, "isthmusd", "backend", false, "sw", cfg->backend, sizeof(cfg->backend)));
	if (strcmp(cfg->backend, "sw") != 0 && strcmp(cfg->backend, "fpga") != 0)
		return isth_conf_fail(
			c, "isthmusd", "backend", "'%s' is not one of: sw, fpga", cfg->backend);
	TRY(copy_str(c, "fpga", "device", false, "/isthmus-fpga0", cfg->fpga_device,
		sizeof(cfg->fpga_device)));
	TRY(isth_conf_enum(c, "isthmusd", "dtype", false, 0, dtype_names, &e));
	cfg->dtype = dtypes[e];
	TRY(conf_u32(c, "isthmusd", "mtu", 1500, 576, 9216, &cfg->mtu));
	TRY(isth_conf_u64(c, "isthmusd", "udp_port", false, ISTH_WIRE_PORT, 1, 65535, &v));
	cfg->udp_port = (uint16_t)v;
	TRY(conf_u32(c, "isthmusd", "mbufs", 8191, 1023, 1u << 22, &cfg->mbufs));
	return 0;
}

static unsigned int
hex_digit(char ch)
{
	return isdigit((unsigned char)ch) ? (unsigned int)(ch - '0')
					  : (unsigned int)(tolower((unsigned char)ch) - 'a' + 10);
}

/* "aa:bb:cc:dd:ee:ff" exactly (@len characters at @s) into @mac. */
static bool
parse_mac(const char *s, size_t len, uint8_t mac[6])
{
	unsigned int i;

	if (len != 17)
		return false;
	for (i = 0; i < 17; i++)
		if (i % 3 == 2 ? s[i] != ':' : !isxdigit((unsigned char)s[i]))
			return false;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)(hex_digit(s[3 * i]) << 4 | hex_digit(s[3 * i + 1]));
	return true;
}

/* One "A.B.C.D/aa:bb:cc:dd:ee:ff" of island_hosts (@len characters at @s). */
static bool
parse_host(const char *s, size_t len, struct isthd_island_host *h)
{
	const char *slash = memchr(s, '/', len);
	char ip[INET_ADDRSTRLEN];
	struct in_addr a;

	if (slash == NULL || (size_t)(slash - s) >= sizeof(ip))
		return false;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1)
		return false;
	h->ip = ntohl(a.s_addr);
	return parse_mac(slash + 1, len - (size_t)(slash - s) - 1, h->mac);
}

/*
 * [access] island_hosts = A.B.C.D/MAC ...: the island's hosts in order
 * (host k owns the k-th chunk range of every round), whitespace between,
 * 1..ISTHD_ISLAND_MAX_HOSTS of them, no address twice. Or island_ip and
 * island_mac, the one host (required when island_hosts is not set).
 */
static int
read_island_hosts(struct isth_conf *c, struct isthd_config *cfg)
{
	const char *v = NULL, *s, *e;
	unsigned int n = 0;

	TRY(isth_conf_str(c, "access", "island_hosts", false, NULL, &v));
	if (v == NULL) {
		TRY(isth_conf_ipv4(c, "access", "island_ip", true, 0, &cfg->island_ip));
		TRY(isth_conf_mac(c, "access", "island_mac", true, NULL, cfg->island_mac));
		cfg->island_hosts[0].ip = cfg->island_ip;
		memcpy(cfg->island_hosts[0].mac, cfg->island_mac, 6);
		cfg->n_island_hosts = 1;
		return 0;
	}
	if (isth_conf_has(c, "access", "island_ip") || isth_conf_has(c, "access", "island_mac"))
		return isth_conf_fail(c, "access", "island_hosts",
			"set either island_hosts or island_ip and island_mac, not both");
	for (s = v;; s = e) {
		s += strspn(s, " \t");
		if (*s == '\0')
			break;
		e = s + strcspn(s, " \t");
		if (n == ISTHD_ISLAND_MAX_HOSTS)
			return isth_conf_fail(c, "access", "island_hosts", "more than %u hosts",
				ISTHD_ISLAND_MAX_HOSTS);
		if (!parse_host(s, (size_t)(e - s), &cfg->island_hosts[n]))
			return isth_conf_fail(c, "access", "island_hosts",
				"host %u '%.*s' is not A.B.C.D/aa:bb:cc:dd:ee:ff", n + 1,
				(int)(e - s), s);
		for (unsigned int i = 0; i < n; i++)
			if (cfg->island_hosts[i].ip == cfg->island_hosts[n].ip)
				return isth_conf_fail(c, "access", "island_hosts",
					"hosts %u and %u have the same address %.*s", i + 1, n + 1,
					(int)(strchr(s, '/') - s), s);
		n++;
	}
	if (n == 0)
		return isth_conf_fail(c, "access", "island_hosts",
			"empty: at least one A.B.C.D/aa:bb:cc:dd:ee:ff");
	cfg->n_island_hosts = n;
	cfg->island_ip = cfg->island_hosts[0].ip;
	memcpy(cfg->island_mac, cfg->island_hosts[0].mac, 6);
	return 0;
}

static int
read_access(struct isth_conf *c, struct isthd_config *cfg)
{
	uint64_t v;

	if (!isth_conf_has_section(c, "access"))
		return isth_conf_fail(c, "access", NULL, "section missing");
	TRY(read_port(c, "access", &cfg->access));
	TRY(read_island_hosts(c, cfg));
	TRY(isth_conf_u64(c, "access", "island_port", false, cfg->udp_port, 1, 65535, &v));
	cfg->island_port = (uint16_t)v;
	/* the island's receiving sockets: AGG stream k goes to island_port +
	 * k % island_sockets (doc/protocol.md, "AGG streams") */
	TRY(conf_u32(c, "access", "island_sockets", 1, 1, ISTHD_ISLAND_MAX_SOCKETS,
		&cfg->island_sockets));
	if ((uint32_t)cfg->island_port + cfg->island_sockets - 1 > 65535)
		return isth_conf_fail(c, "access", "island_sockets",
			"island_port + island_sockets - 1 is past port 65535");
	return 0;
}

/* [wan] but udp_checksum, whose default follows [auth] (read_auth()) */
static int
read_wan(struct isth_conf *c, struct isthd_config *cfg)
{
	static const char *const repl_names[] = {"edge", "network", NULL};
	unsigned int e;
	uint64_t v;

	if (!isth_conf_has_section(c, "wan"))
		return isth_conf_fail(c, "wan", NULL, "section missing");
	TRY(read_port(c, "wan", &cfg->wan));
	TRY(isth_conf_mac(c, "wan", "gateway_mac", true, NULL, cfg->gateway_mac));
	TRY(isth_conf_bool(c, "wan", "repair", false, true, &cfg->wan_repair));
	TRY(isth_conf_duration(c, "wan", "repair_before", false, 20000000ull, 0, 10000000000ull,
		&cfg->wan_repair_before_ns));
	TRY(isth_conf_duration(c, "wan", "tail_wait", false, 5000000ull, 0, 10000000000ull,
		&cfg->wan_tail_wait_ns));
	TRY(isth_conf_u64(c, "wan", "last_nack_copies", false, 2, 1, 4, &v));
	cfg->wan_last_nack_copies = (unsigned int)v;
	TRY(isth_conf_u64(c, "wan", "nack_echoes", false, 3, 0, 8, &v));
	cfg->wan_nack_echoes = (unsigned int)v;
	TRY(isth_conf_u64(c, "wan", "repair_attempts", false, 8, 1, 64, &v));
	cfg->wan_repair_attempts = (unsigned int)v;
	TRY(isth_conf_enum(c, "wan", "replication", false, 0, repl_names, &e));
	cfg->wan_repl_network = e == 1;
	TRY(isth_conf_ipv4(
		c, "wan", "group_base", false, ISTHD_GROUP_BASE_DEFAULT, &cfg->wan_group_base));
	/* base + cycle round * 64 + island: a /16 of routable multicast */
	if ((cfg->wan_group_base & 0xffffu) != 0 || cfg->wan_group_base >> 28 != 0xe ||
		cfg->wan_group_base >> 16 == 0xe000u)
		return isth_conf_fail(c, "wan", "group_base",
			"must be A.B.0.0 in 224.1.0.0 - 239.255.0.0 (a /16 of multicast groups)");
	TRY(isth_conf_u64(c, "wan", "tail_copies", false, 2, 0, 64, &v));
	cfg->wan_tail_copies = (unsigned int)v;
	TRY(isth_conf_duration(c, "wan", "tail_copies_after", false, 20000000ull, 0, 10000000000ull,
		&cfg->wan_tail_copies_after_ns));
	/* repairs and NACKs to peers: EF (46), a WAN's priority class */
	TRY(isth_conf_u64(c, "wan", "repair_dscp", false, 46, 0, 63, &v));
	cfg->wan_repair_dscp = (uint8_t)v;
	if (strcmp(cfg->access.dev, cfg->wan.dev) == 0)
		return isth_conf_fail(
			c, "wan", "port", "'%s' is also the access port", cfg->wan.dev);
	return 0;
}

/* One [peer NAME] section; @name is its NAME. */
static int
read_peer(
	struct isth_conf *c, const struct isthd_config *cfg, const char *name, struct isthd_peer *p)
{
	char sec[ISTHD_NAME_MAX + 8];
	uint64_t v;

	if (strlen(name) >= sizeof(p->name)) {
		snprintf(sec, sizeof(sec), "peer %.*s", ISTHD_NAME_MAX, name);
		return isth_conf_fail(c, sec, NULL, "island name too long");
	}
	snprintf(sec, sizeof(sec), "peer %s", name);
	strcpy(p->name, name);
	p->line = isth_conf_line(c, sec, NULL);
	TRY(isth_conf_ipv4(c, sec, "ip", true, 0, &p->ip));
	TRY(isth_conf_mac(c, sec, "mac", false, cfg->gateway_mac, p->mac));
	TRY(isth_conf_u64(c, sec, "port", false, cfg->udp_port, 1, 65535, &v));
	p->port = (uint16_t)v;
	TRY(isth_conf_duration(c, sec, "latency", false, 0, 0, 10000000000ull, &p->latency_ns));
	/* one group datagram reaches every peer: one port for all */
	if (cfg->wan_repl_network && p->port != cfg->udp_port)
		return isth_conf_fail(c, sec, "port",
			"%u: with [wan] replication = network every peer listens on "
			"[isthmusd] udp_port (%u)",
			p->port, cfg->udp_port);
	return 0;
}

static int
read_peers(struct isth_conf *c, struct isthd_config *cfg)
{
	const char *names[ISTHD_MAX_PEERS + 1];
	unsigned int n, i;

	n = isth_conf_sections(c, "peer", names, ISTHD_MAX_PEERS + 1);
	if (n > ISTHD_MAX_PEERS) {
		char sec[ISTHD_NAME_MAX + 8];

		snprintf(sec, sizeof(sec), "peer %s", names[ISTHD_MAX_PEERS]);
		return isth_conf_fail(c, sec, NULL, "more than %u peers", ISTHD_MAX_PEERS);
	}
	for (i = 0; i < n; i++)
		TRY(read_peer(c, cfg, names[i], &cfg->peers[i]));
	cfg->n_peers = n;
	return 0;
}

/* [agg] max_abs: off (the default), or a positive finite bound on every
 * element of a peer's fp32/bf16 DATA (rx.c: data_too_large) */
static int
read_max_abs(struct isth_conf *c, struct isthd_config *cfg)
{
	const char *v;
	char *end;
	float f;

	TRY(isth_conf_str(c, "agg", "max_abs", false, "off", &v));
	cfg->agg_max_abs_on = strcmp(v, "off") != 0;
	if (!cfg->agg_max_abs_on)
		return 0;
	errno = 0;
	f = strtof(v, &end);
	if (end == v || *end != '\0' || errno != 0 || !isfinite(f) || !(f > 0.0f))
		return isth_conf_fail(c, "agg", "max_abs",
			"'%s' is not 'off' or a positive finite number (e.g. 1e4)", v);
	cfg->agg_max_abs = f;
	return 0;
}

static int
read_agg(struct isth_conf *c, struct isthd_config *cfg)
{
	static const char *const bf16_names[] = {"bf16", "fp32", NULL};
	struct isth_wire_limits lim;
	unsigned int e;
	uint64_t slot;

	TRY(isth_conf_size(
		c, "agg", "memory", false, 64ull << 20, 0, 1ull << 40, &cfg->agg_memory));
	/* Every backend needs room for 2 slots of one packet's fp32 elements
	 * (cache-line rounded, as lib/agg sizes them); refused here so that
	 * --check names the line instead of the start. */
	isth_wire_limits_init_auth(&lim, 1, cfg->mtu, false);
	slot = ((uint64_t)lim.max_elems * 4 + 63) & ~63ull;
	if (cfg->agg_memory < 2 * slot)
		return isth_conf_fail(c, "agg", "memory",
			"%llu bytes holds fewer than 2 slots of %llu bytes (mtu %u): at least %llu",
			(unsigned long long)cfg->agg_memory, (unsigned long long)slot, cfg->mtu,
			(unsigned long long)(2 * slot));
	TRY(isth_conf_duration(c, "agg", "timeout", false, 2000000000ull, 1000, 60000000000ull,
		&cfg->agg_timeout_ns));
	TRY(isth_conf_duration(c, "agg", "round_slack", false, 10000000ull, 0, 10000000000ull,
		&cfg->agg_round_slack_ns));
	TRY(conf_u32(c, "agg", "window", 4, 2, 64, &cfg->agg_window));
	TRY(conf_u32(c, "agg", "max_chunks", 1u << 20, 1, UINT32_MAX, &cfg->agg_max_chunks));
	TRY(isth_conf_enum(c, "agg", "bf16_out", false, 0, bf16_names, &e));
	cfg->bf16_out = e == 0 ? ISTH_WIRE_DTYPE_BF16 : ISTH_WIRE_DTYPE_FP32;
	return read_max_abs(c, cfg);
}

/* A ring's entries: a power of two, so that a seq masks to its index. */
static int
conf_pow2(struct isth_conf *c, const char *sec, const char *key, uint64_t def, uint64_t min,
	uint64_t max, uint32_t *out)
{
	uint64_t v;

	TRY(isth_conf_u64(c, sec, key, false, def, min, max, &v));
	if (v & (v - 1))
		return isth_conf_fail(
			c, sec, key, "%llu is not a power of two", (unsigned long long)v);
	*out = (uint32_t)v;
	return 0;
}

/* [resend], [pace], [poll] and [telemetry]: the data path's knobs */
static int
read_tuning(struct isth_conf *c, struct isthd_config *cfg)
{
	uint64_t v;

	TRY(isth_conf_duration(c, "resend", "window", false, 500000000ull, 1000000, 60000000000ull,
		&cfg->resend_window_ns));
	TRY(conf_pow2(c, "resend", "entries", 4096, 64, 1u << 20, &cfg->resend_entries));
	TRY(isth_conf_duration(c, "resend", "linger", false, 2000000ull, 0, 10000000000ull,
		&cfg->resend_linger_ns));

	TRY(conf_pow2(c, "pace", "queue", 8192, 2, 1u << 24, &cfg->pace_queue));
	TRY(isth_conf_size(c, "pace", "burst", false, 64 * 1024, 2048, 64ull << 20, &v));
	cfg->pace_burst = (uint32_t)v;
	TRY(isth_conf_duration(c, "pace", "late_tolerance", false, 1000000ull, 0, 10000000000ull,
		&cfg->pace_late_ns));

	TRY(conf_u32(c, "poll", "idle_polls", 0, 0, UINT32_MAX, &cfg->idle_polls));
	TRY(isth_conf_duration(
		c, "poll", "idle_sleep", false, 50000ull, 1000, 100000000ull, &cfg->idle_sleep_ns));

	TRY(isth_conf_bool(c, "telemetry", "enabled", false, true, &cfg->telemetry));
	TRY(isth_conf_bool(c, "telemetry", "round_log", false, true, &cfg->round_log));
	return 0;
}

static int
read_auth(struct isth_conf *c, struct isthd_config *cfg)
{
	static const char *const auth_modes[] = {"on", "off", NULL};
	unsigned int e;

	TRY(isth_conf_enum(c, "auth", "mode", false, 0, auth_modes, &e));
	cfg->auth = e == 0;
	TRY(copy_str(c, "auth", "key_file", cfg->auth, NULL, cfg->key_file, sizeof(cfg->key_file)));
	/* how far a seq may run ahead of this edge's clock (lib/auth,
	 * isth_auth_seq_ahead): a genuine sender's seq never does, so the
	 * slack is the clock offset between the hosts (doc/protocol.md,
	 * "Replay window"); 1 ms..60 s */
	TRY(isth_conf_duration(c, "auth", "seq_ahead", false, 1000000000ull /* 1 s */, 1000000ull,
		60000000000ull, &cfg->seq_ahead_ns));
	/* UDP checksums on the DATA to peers: by default only without auth.
	 * With auth on, the tag covers every byte of the message (a flipped
	 * bit is auth_tag, doc/security.md), so a checksum would only cost a
	 * read of every payload on both edges. */
	TRY(isth_conf_bool(c, "wan", "udp_checksum", false, !cfg->auth, &cfg->wan_udp_csum));
	/* backend = fpga with auth on: the device verifies and seals
	 * (interface 1.1); a 1.0 device is refused when the backend starts */
	return 0;
}

/* [metrics] listen: "off" (the default) or IPv4:PORT, PORT 0 the kernel's
 * choice. Off by default: the endpoint is an open TCP port answering
 * anyone who reaches it, with no authentication. */
static int
read_metrics(struct isth_conf *c, struct isthd_config *cfg)
{
	const char *v = NULL, *colon;
	char ip[INET_ADDRSTRLEN];
	struct in_addr a;
	uint64_t port;

	TRY(isth_conf_str(c, "metrics", "listen", false, "off", &v));
	if (strcmp(v, "off") == 0)
		return 0;
	colon = strrchr(v, ':');
	if (colon == NULL || (size_t)(colon - v) >= sizeof(ip) ||
		isth_text_parse_u64_range(colon + 1, 0, 65535, &port) < 0)
		goto bad;
	memcpy(ip, v, (size_t)(colon - v));
	ip[colon - v] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1)
		goto bad;
	cfg->metrics = true;
	cfg->metrics_ip = ntohl(a.s_addr);
	cfg->metrics_port = (uint16_t)port;
	return 0;
bad:
	return isth_conf_fail(c, "metrics", "listen",
		"'%s' is not off or IPv4:PORT (e.g. 127.0.0.1:9470; port 0: any free one)", v);
}

/*
 * Every section in the order its keys are checked (the first error is the
 * one reported), then the keys nobody asked for.
 */
static int
load(struct isth_conf *c, struct isthd_config *cfg)
{
	TRY(read_isthmusd(c, cfg));
	TRY(read_access(c, cfg));
	TRY(read_wan(c, cfg));
	TRY(read_peers(c, cfg));
	TRY(read_agg(c, cfg));
	TRY(read_tuning(c, cfg));
	TRY(read_auth(c, cfg));
	TRY(read_metrics(c, cfg));
	return isth_conf_check_unused(c);
}

/*
 * @c, just read from @name (NULL: not read, errno and @err say why), into
 * @cfg; isthd_config_parse() and isthd_config_load() differ only in how
 * they read.
 */
static int
load_from(
	struct isth_conf *c, const char *name, struct isthd_config *cfg, char *err, size_t err_size)
{
	int rc = c == NULL ? -errno : 0;

	/* cleared and named even when not read, as callers may print it */
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", name);
	if (c == NULL)
		return rc;
	rc = load(c, cfg);
	if (rc)
		snprintf(err, err_size, "%s", isth_conf_error(c));
	isth_conf_free(c);
	return rc;
}

int
isthd_config_parse(
	const char *text, const char *name, struct isthd_config *cfg, char *err, size_t err_size)
{
	return load_from(isth_conf_parse(text, name, err, err_size), name, cfg, err, err_size);
}

int
isthd_config_load(const char *path, struct isthd_config *cfg, char *err, size_t err_size)
{
	return load_from(isth_conf_load(path, err, err_size), path, cfg, err, err_size);
}

/*
 * The loader's own list of keys (isthmusd --config-keys): load() over a
 * config that sets only the required keys and one [peer NAME], with
 * lib/conf recording every key the readers ask for, so that the list is
 * what the code reads (doc/operator.md is checked against it). Every key
 * is asked for whatever the values; the one exception, [isthmusd] epoch
 * as a number, is the same key as a string first. A section read only
 * when present must be present here, or its keys go unlisted.
 */
int
isthd_config_keys(FILE *f)
{
	static const char text[] = "[isthmusd]\nisland = ISLAND\njob = 1\n"
				   "[access]\nport = access\nip = 10.0.0.1\n"
				   "island_ip = 10.0.0.2\nisland_mac = 02:00:00:00:00:02\n"
				   "[wan]\nport = wan\nip = 10.1.0.1\n"
				   "gateway_mac = 02:00:00:00:00:01\n"
				   "[peer NAME]\nip = 10.1.0.2\n"
				   "[auth]\nkey_file = keys\n";
	static struct isthd_config cfg;
	const struct isth_conf_key *k;
	char err[ISTH_CONF_ERR_SIZE];
	struct isth_conf *c;
	int n, i, rc;

	c = isth_conf_parse(text, "--config-keys", err, sizeof(err));
	if (c == NULL)
		return -errno;
	isth_conf_record(c, true);
	memset(&cfg, 0, sizeof(cfg));
	rc = load(c, &cfg);
	if (rc)
		fprintf(stderr, "isthmusd: --config-keys: %s\n", isth_conf_error(c));
	n = isth_conf_schema(c, &k);
	if (rc == 0 && n < 0)
		rc = n;
	for (i = 0; rc == 0 && i < n; i++) {
		const char *def = k[i].def[0] ? k[i].def : "none";

		fprintf(f, "%s\t%s\t%s\t%s", k[i].section, k[i].key, k[i].type,
			k[i].required ? "required" : def);
		if (k[i].ranged)
			fprintf(f, "\t%" PRIu64 "..%" PRIu64, k[i].min, k[i].max);
		else
			fprintf(f, "\t-");
		fprintf(f, "\t%s\n", k[i].choices[0] ? k[i].choices : "-");
	}
	isth_conf_free(c);
	return rc;
}
