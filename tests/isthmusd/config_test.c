/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmusd configuration: a good file gives the documented values and
 * defaults; each malformed file gives its documented error, naming file,
 * line and key (doc/isthmusd.md, "Configuration").
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "config.h"
#include "isth_wire.h"

#define GOOD_HEAD \
	"[isthmusd]\n" \
	"island = NYC\n" \
	"job = 7\n" \
	"schedule = x.sched\n"
#define GOOD_TAIL \
	"[access]\n" \
	"port = net_ring_access\n" \
	"ip = 10.10.0.1\n" \
	"island_ip = 10.10.0.2\n" \
	"island_mac = 02:00:00:00:00:02\n" \
	"[wan]\n" \
	"port = net_ring_wan\n" \
	"ip = 10.0.0.1\n" \
	"gateway_mac = 02:00:00:00:01:00\n" \
	"[peer LON]\n" \
	"ip = 10.0.0.2\n"
#define GOOD GOOD_HEAD GOOD_TAIL
/* GOOD_TAIL up to [wan] gateway_mac (line 13): [wan] keys follow */
#define WAN_OPEN \
	"[access]\n" \
	"port = net_ring_access\n" \
	"ip = 10.10.0.1\n" \
	"island_ip = 10.10.0.2\n" \
	"island_mac = 02:00:00:00:00:02\n" \
	"[wan]\n" \
	"port = net_ring_wan\n" \
	"ip = 10.0.0.1\n" \
	"gateway_mac = 02:00:00:00:01:00\n"

/* [access] up to island_hosts (line 8): the value follows */
#define HOSTS_OPEN \
	GOOD_HEAD \
	"[access]\n" \
	"port = net_ring_access\n" \
	"ip = 10.10.0.1\n" \
	"island_hosts ="
#define HOSTS_CLOSE \
	"\n[wan]\n" \
	"port = net_ring_wan\n" \
	"ip = 10.0.0.1\n" \
	"gateway_mac = 02:00:00:00:01:00\n" \
	"[peer LON]\n" \
	"ip = 10.0.0.2\n"

/* [access] island_hosts: the hosts in order, host 0 also as island_ip */
Test(isthmusd_config, island_hosts)
{
	static const uint8_t mac2[6] = {0x02, 0, 0, 0, 0x0a, 0xbc};
	struct isthd_config c;
	char err[512] = "";

	cr_assert_eq(isthd_config_parse(HOSTS_OPEN " 10.10.0.2/02:00:00:00:00:02\t "
						   "10.10.0.3/02:00:00:00:00:03   10.10.0.7/"
						   "02:00:00:00:0A:bc" HOSTS_CLOSE
						   "[auth]\nmode = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_assert_eq(c.n_island_hosts, 3);
	cr_expect_eq(c.island_hosts[0].ip, 0x0a0a0002u);
	cr_expect_eq(c.island_hosts[1].ip, 0x0a0a0003u);
	cr_expect_eq(c.island_hosts[2].ip, 0x0a0a0007u);
	cr_expect_eq(c.island_hosts[1].mac[5], 0x03);
	cr_expect_arr_eq(c.island_hosts[2].mac, mac2, 6);
	cr_expect_eq(c.island_ip, 0x0a0a0002u);
	cr_expect_eq(c.island_mac[5], 0x02);
	/* the old keys: one host */
	cr_assert_eq(
		isthd_config_parse(GOOD "[auth]\nmode = off\n", "t.conf", &c, err, sizeof(err)), 0,
		"%s", err);
	cr_expect_eq(c.n_island_hosts, 1);
	cr_expect_eq(c.island_hosts[0].ip, 0x0a0a0002u);
	cr_expect_eq(c.island_hosts[0].mac[5], 0x02);
	/* one host in the new form: auth may stay on */
	cr_assert_eq(isthd_config_parse(HOSTS_OPEN " 10.10.0.9/02:00:00:00:00:09" HOSTS_CLOSE
						   "[auth]\nkey_file = k.keys\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect_eq(c.n_island_hosts, 1);
	cr_expect_eq(c.island_ip, 0x0a0a0009u);
	/* several hosts with auth on: each host its own replay windows and
	 * seqs (doc/protocol.md, "An island of several hosts") */
	cr_assert_eq(isthd_config_parse(HOSTS_OPEN " 10.10.0.2/02:00:00:00:00:02 "
						   "10.10.0.3/02:00:00:00:00:03" HOSTS_CLOSE
						   "[auth]\nkey_file = k.keys\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.auth);
	cr_expect_eq(c.n_island_hosts, 2);
}

/* 16 hosts load, the 17th is refused */
Test(isthmusd_config, island_hosts_at_most_16)
{
	struct isthd_config c;
	char text[2048], err[512] = "";
	size_t n;

	for (unsigned int k = 16; k <= 17; k++) {
		n = (size_t)snprintf(text, sizeof(text), "%s", HOSTS_OPEN);
		for (unsigned int h = 0; h < k; h++)
			n += (size_t)snprintf(text + n, sizeof(text) - n,
				" 10.9.0.%u/02:00:00:00:00:%02x", h + 1, h);
		snprintf(text + n, sizeof(text) - n, "%s[auth]\nmode = off\n", HOSTS_CLOSE);
		if (k == 16) {
			cr_assert_eq(isthd_config_parse(text, "t.conf", &c, err, sizeof(err)), 0,
				"%s", err);
			cr_expect_eq(c.n_island_hosts, 16);
			cr_expect_eq(c.island_hosts[15].ip, 0x0a090010u);
			cr_expect_eq(c.island_hosts[15].mac[5], 0x0f);
		} else {
			cr_expect_lt(isthd_config_parse(text, "t.conf", &c, err, sizeof(err)), 0);
			cr_expect_str_eq(
				err, "t.conf:8: [access] island_hosts: more than 16 hosts");
		}
	}
}

/* [wan] replication = network and its group base */
Test(isthmusd_config, network_replication)
{
	struct isthd_config c;
	char err[512] = "";

	cr_assert_eq(isthd_config_parse(GOOD_HEAD WAN_OPEN
			     "replication = network\ngroup_base = 239.7.0.0\n"
			     "[peer LON]\nip = 10.0.0.2\nport = 9471\n[auth]\nmode = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.wan_repl_network);
	cr_expect_eq(c.wan_group_base, 0xef070000u);
	/* base + cycle round * 64 + the clique's lowest island */
	cr_expect_eq(isthd_group_ip(c.wan_group_base, 3, 0x28), 0xef070000u + 3 * 64 + 3);
	cr_expect_eq(isthd_group_ip(c.wan_group_base, 1023, 1ull << 63), 0xef07ffffu);
}

Test(isthmusd_config, good_file_and_defaults)
{
	struct isthd_config c;
	char err[512] = "";

	cr_assert_eq(isthd_config_parse(GOOD "[agg]\nmemory = 32Gi\n[auth]\nkey_file = k.keys\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.auth, "[auth] mode is on by default");
	cr_expect_not(c.wan_udp_csum, "no UDP checksums to peers with auth on: the tag covers it");
	cr_expect_str_eq(c.key_file, "k.keys");
	cr_expect_eq(c.seq_ahead_ns, 1000000000ull, "[auth] seq_ahead defaults to 1 s");
	cr_expect_not(c.agg_max_abs_on, "[agg] max_abs is off by default");
	cr_expect_str_eq(c.island, "NYC");
	cr_expect_eq(c.job, 7);
	cr_expect_str_eq(c.access.dev, "net_ring_access");
	cr_expect_eq(c.access.ip, 0x0a0a0001);
	cr_expect_eq(c.island_port, ISTH_WIRE_PORT);
	cr_expect_eq(c.island_sockets, 1, "[access] island_sockets defaults to 1");
	cr_expect_eq(c.n_peers, 1);
	cr_expect_str_eq(c.peers[0].name, "LON");
	cr_expect_eq(c.peers[0].line, 14);
	/* a peer without mac uses the gateway's */
	cr_expect_eq(c.peers[0].mac[4], 0x01);
	cr_expect_eq(c.agg_memory, 32ull << 30);
	/* defaults, as doc/isthmusd.md lists them */
	cr_expect_eq(c.mtu, 1500);
	cr_expect_str_eq(c.backend, "sw");
	cr_expect_eq(c.agg_timeout_ns, 2000000000ull);
	cr_expect_eq(c.agg_round_slack_ns, 10000000ull);
	cr_expect_eq(c.resend_entries, 4096);
	cr_expect_eq(c.resend_window_ns, 500000000ull);
	cr_expect_eq(c.pace_queue, 8192);
	cr_expect_eq(c.idle_polls, 0, "back-off is off by default");
	cr_expect(c.telemetry);
	cr_expect_eq(c.epoch_mode, ISTHD_EPOCH_SCHEDULE);
	cr_expect_eq(c.wan_last_nack_copies, 2, "a last-chance peer NACK goes twice by default");
	cr_expect_eq(c.wan_nack_echoes, 3, "three echoes behind each last-chance NACK by default");
	cr_expect_eq(c.wan_repair_dscp, 46, "repairs and NACKs marked EF");
	cr_expect_eq(
		c.wan_repair_attempts, 8, "a chunk repaired to a peer 8 times a round at most");
	cr_expect_eq(c.dtype, ISTH_WIRE_DTYPE_NONE, "dtype unchecked by default");
	cr_expect_not(c.wan_repl_network, "edge replication by default");
	cr_expect_eq(c.wan_group_base, 0xefc00000u, "groups in 239.192.0.0/16 by default");
	cr_assert_eq(isthd_config_parse(GOOD_HEAD "dtype = fp32\n" GOOD_TAIL "[auth]\nmode = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect_eq(c.dtype, ISTH_WIRE_DTYPE_FP32);
	cr_expect_not(c.auth);
	cr_assert_eq(isthd_config_parse(GOOD_HEAD "dtype = bf16\n" GOOD_TAIL "[auth]\nmode = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect_eq(c.dtype, ISTH_WIRE_DTYPE_BF16, "a bf16 job's edge admits bf16 DATA only");
	cr_assert_eq(isthd_config_parse(GOOD_HEAD "dtype = fp32\n" GOOD_TAIL "[auth]\nmode = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.wan_udp_csum, "UDP checksums to peers by default with auth off");
	cr_assert_eq(
		isthd_config_parse(GOOD_HEAD WAN_OPEN "udp_checksum = yes\n[peer LON]\n"
						      "ip = 10.0.0.2\n[auth]\nkey_file = k.keys\n",
			"t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.wan_udp_csum && c.auth, "udp_checksum = yes with auth on");
	cr_assert_eq(isthd_config_parse(GOOD_HEAD WAN_OPEN "udp_checksum = no\n[peer LON]\n"
							   "ip = 10.0.0.2\n[auth]\nmode = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(!c.wan_udp_csum && !c.auth, "udp_checksum = no with auth off");
	cr_expect_str_eq(c.key_file, "");
	cr_expect(!c.wan.xdp_pin_sources, "source pinning is off by default");
	cr_assert_eq(isthd_config_parse(GOOD_HEAD
			     "[access]\nport = a\nip = 10.10.0.1\nisland_ip = 10.10.0.2\n"
			     "island_mac = 02:00:00:00:00:02\nxdp_iface = veth0\n"
			     "xdp_pin_sources = on\n[wan]\nport = w\nip = 10.0.0.1\n"
			     "gateway_mac = 02:00:00:00:01:00\nxdp_iface = veth1\n"
			     "xdp_pin_sources = yes\n[auth]\nmode = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.access.xdp_pin_sources);
	cr_expect(c.wan.xdp_pin_sources);
}

struct bad_conf {
	/* appended to GOOD; or, starting with '!', the whole file; or,
	 * starting with '@', inserted at line 5, inside [isthmusd]; or,
	 * starting with '%', appended to GOOD as is. Except with '%' or when
	 * it has one, an "[auth] mode = off" section is appended (GOOD has
	 * none, and auth is on by default: a key file would be required). */
	char extra[300];
	char want[200];
};

static struct bad_conf bad_confs[] = {
	{"!", "t.conf: [isthmusd]: section missing"},
	{"!# nothing\n[isthmusd]\njob = 1\n", "t.conf:2: [isthmusd] island: required key missing"},
	{"[agg]\nmemory = lots\n",
		"t.conf:17: [agg] memory: 'lots' is not a size (bytes, or with K/M/G/T or "
		"Ki/Mi/Gi/Ti)"},
	/* 2 slots of 1472 bytes at mtu 1500: 1500 - 20 (IPv4) - 8 (UDP) - 40 (isthmus)
	 * = 1432 bytes = 358 fp32, rounded up to 23 cache lines */
	{"[agg]\nmemory = 0\n",
		"t.conf:17: [agg] memory: 0 bytes holds fewer than 2 slots of 1472 bytes (mtu "
		"1500): at least 2944"},
	{"[agg]\nmemory = 2943\n",
		"t.conf:17: [agg] memory: 2943 bytes holds fewer than 2 slots of 1472 bytes (mtu "
		"1500): at least 2944"},
	{"[agg]\ntimeout = 50\n",
		"t.conf:17: [agg] timeout: '50' is not a duration with a unit (ns, us, ms, s)"},
	{"[agg]\nwindow = 1\n", "t.conf:17: [agg] window: 1 out of range [2, 64]"},
	{"[agg]\nbf16_out = fp16\n", "t.conf:17: [agg] bf16_out: 'fp16' is not one of: bf16, fp32"},
	{"[resend]\nentries = 1000\n", "t.conf:17: [resend] entries: 1000 is not a power of two"},
	{"[pace]\nqueue = 3\n", "t.conf:17: [pace] queue: 3 is not a power of two"},
	{"[poll]\nidle_sleep = 1ns\n",
		"t.conf:17: [poll] idle_sleep: 1ns out of range [1000, 100000000]"},
	{"[telemetry]\nenabled = perhaps\n",
		"t.conf:17: [telemetry] enabled: 'perhaps' is not a boolean (true/false, yes/no, "
		"on/off, 1/0)"},
	{"[peer CHI]\nmac = 02:00:00:00:00:09\n", "t.conf:16: [peer CHI] ip: required key missing"},
	{"[peer CHI]\nip = 10.0.0.300\n",
		"t.conf:17: [peer CHI] ip: '10.0.0.300' is not an IPv4 address"},
	{"[peer CHI]\nip = 10.0.0.3\ncolour = red\n",
		"t.conf:18: unknown key 'colour' in [peer CHI]"},
	{"[agg]\nmemmory = 1G\n", "t.conf:17: unknown key 'memmory' in [agg]"},
	{"[aggregation]\nmemory = 1G\n", "t.conf:16: unknown section [aggregation]"},
	{"[isthmusd]\n", "t.conf:16: section [isthmusd] repeated (first at line 1)"},
	{"@backend = gpu\n", "t.conf:5: [isthmusd] backend: 'gpu' is not one of: sw, fpga"},
	{"@dtype = bf17\n",
		"t.conf:5: [isthmusd] dtype: 'bf17' is not one of: any, int32, fp32, bf16"},
	{"@mtu = 100\n", "t.conf:5: [isthmusd] mtu: 100 out of range [576, 9216]"},
	{"@epoch = soon\n", "t.conf:5: [isthmusd] epoch: 'soon' is not an unsigned integer"},
	{"@job = 8\n", "t.conf:5: [isthmusd] job set twice (first at line 3)"},
	{"job = 8\n", "t.conf:16: unknown key 'job' in [peer LON]"},
	{"[wan]\n", "t.conf:16: section [wan] repeated (first at line 10)"},
	{"!" GOOD_HEAD WAN_OPEN "repair_dscp = 64\n[peer LON]\nip = 10.0.0.2\n[auth]\nmode = off\n",
		"t.conf:14: [wan] repair_dscp: 64 out of range [0, 63]"},
	{"!" GOOD_HEAD WAN_OPEN
	 "repair_attempts = 0\n[peer LON]\nip = 10.0.0.2\n[auth]\nmode = off\n",
		"t.conf:14: [wan] repair_attempts: 0 out of range [1, 64]"},
	{"!" GOOD_HEAD WAN_OPEN "nack_echoes = 9\n[peer LON]\nip = 10.0.0.2\n[auth]\nmode = off\n",
		"t.conf:14: [wan] nack_echoes: 9 out of range [0, 8]"},
	{"%", "t.conf: [auth] key_file: required key missing"},
	{"[auth]\nmode = on\n", "t.conf:16: [auth] key_file: required key missing"},
	{"[auth]\nmode = maybe\n", "t.conf:17: [auth] mode: 'maybe' is not one of: on, off"},
	{"[auth]\nmode = off\nkey = x\n", "t.conf:18: unknown key 'key' in [auth]"},
	{"!"
	 "[isthmusd]\nisland = 1\njob = 1\n[access]\nport = p\nip = 1.2.3.4\nisland_ip = 1.2.3.5\n"
	 "island_mac = 02:00:00:00:00:02\n[wan]\nport = p\nip = 1.2.3.6\ngateway_mac = "
	 "02:00:00:00:00:03\n",
		"t.conf:10: [wan] port: 'p' is also the access port"},
	{"!" GOOD_HEAD WAN_OPEN "replication = multicast\n[peer LON]\nip = 10.0.0.2\n",
		"t.conf:14: [wan] replication: 'multicast' is not one of: edge, network"},
	{"!" GOOD_HEAD WAN_OPEN "group_base = 239.192.1.0\n[peer LON]\nip = 10.0.0.2\n",
		"t.conf:14: [wan] group_base: must be A.B.0.0 in 224.1.0.0 - 239.255.0.0 (a /16 "
		"of multicast groups)"},
	{"!" GOOD_HEAD WAN_OPEN "group_base = 224.0.0.0\n[peer LON]\nip = 10.0.0.2\n",
		"t.conf:14: [wan] group_base: must be A.B.0.0 in 224.1.0.0 - 239.255.0.0 (a /16 "
		"of multicast groups)"},
	{"!" GOOD_HEAD WAN_OPEN "group_base = 10.1.0.0\n[peer LON]\nip = 10.0.0.2\n",
		"t.conf:14: [wan] group_base: must be A.B.0.0 in 224.1.0.0 - 239.255.0.0 (a /16 "
		"of multicast groups)"},
	{"!" GOOD_HEAD WAN_OPEN "replication = network\n[peer LON]\nip = 10.0.0.2\nport = 9000\n",
		"t.conf:17: [peer LON] port: 9000: with [wan] replication = network every peer "
		"listens on [isthmusd] udp_port (9471)"},
	/* [access] island_sockets: 1..16, and its last port a port */
	{"!" GOOD_HEAD "[access]\nport = a\nip = 10.10.0.1\nisland_ip = 10.10.0.2\n"
	 "island_mac = 02:00:00:00:00:02\nisland_sockets = 17\n[wan]\nport = p\n"
	 "ip = 10.0.0.1\ngateway_mac = 02:00:00:00:01:00\n[auth]\nmode = off\n",
		"t.conf:10: [access] island_sockets: 17 out of range [1, 16]"},
	{"!" GOOD_HEAD "[access]\nport = a\nip = 10.10.0.1\nisland_ip = 10.10.0.2\n"
	 "island_mac = 02:00:00:00:00:02\nisland_port = 65535\nisland_sockets = 2\n"
	 "[wan]\nport = p\nip = 10.0.0.1\ngateway_mac = 02:00:00:00:01:00\n"
	 "[auth]\nmode = off\n",
		"t.conf:11: [access] island_sockets: island_port + island_sockets - 1 is past port "
		"65535"},
	/* [access] island_hosts: A.B.C.D/MAC each, 1..16, no address twice,
	 * not with island_ip/island_mac, not with auth on for several */
	{"!" HOSTS_OPEN " 10.10.0.2/02:00:00:00:00:02 10.10.0.3" HOSTS_CLOSE,
		"t.conf:8: [access] island_hosts: host 2 '10.10.0.3' is not "
		"A.B.C.D/aa:bb:cc:dd:ee:ff"},
	{"!" HOSTS_OPEN " 10.10.0.2/02:00:00:00:00:0g" HOSTS_CLOSE,
		"t.conf:8: [access] island_hosts: host 1 '10.10.0.2/02:00:00:00:00:0g' is not "
		"A.B.C.D/aa:bb:cc:dd:ee:ff"},
	{"!" HOSTS_OPEN " 10.10.0.256/02:00:00:00:00:02" HOSTS_CLOSE,
		"t.conf:8: [access] island_hosts: host 1 '10.10.0.256/02:00:00:00:00:02' is not "
		"A.B.C.D/aa:bb:cc:dd:ee:ff"},
	{"!" HOSTS_OPEN " 10.10.0.2/02:00:00:00:00:02,10.10.0.3/02:00:00:00:00:03" HOSTS_CLOSE,
		"t.conf:8: [access] island_hosts: host 1 "
		"'10.10.0.2/02:00:00:00:00:02,10.10.0.3/02:00:00:00:00:03' is not "
		"A.B.C.D/aa:bb:cc:dd:ee:ff"},
	{"!" HOSTS_OPEN " 10.10.0.2/02:00:00:00:00:02 10.10.0.2/02:00:00:00:00:03" HOSTS_CLOSE,
		"t.conf:8: [access] island_hosts: hosts 1 and 2 have the same address "
		"10.10.0.2"},
	{"!" HOSTS_OPEN HOSTS_CLOSE, "t.conf:8: [access] island_hosts: empty value"},
	{"!" HOSTS_OPEN " 10.10.0.2/02:00:00:00:00:02\nisland_ip = 10.10.0.2" HOSTS_CLOSE,
		"t.conf:8: [access] island_hosts: set either island_hosts or island_ip and "
		"island_mac, not both"},
	/* source pinning is the XDP program's: no program, no pinning */
	{"!"
	 "[isthmusd]\nisland = 1\njob = 1\n[access]\nport = a\nip = 1.2.3.4\nisland_ip = 1.2.3.5\n"
	 "island_mac = 02:00:00:00:00:02\n[wan]\nport = p\nip = 1.2.3.6\ngateway_mac = "
	 "02:00:00:00:00:03\nxdp_pin_sources = on\n",
		"t.conf:13: [wan] xdp_pin_sources: needs xdp_iface (the interface running "
		"lib/xdp's program)"},
};

/* backend = fpga with auth on loads: the device verifies and seals
 * (interface 1.1; a 1.0 device is refused when the backend starts) */
Test(isthmusd_config, fpga_with_auth_on)
{
	struct isthd_config c;
	char err[512] = "";

	cr_assert_eq(isthd_config_parse(GOOD_HEAD "backend = fpga\n" GOOD_TAIL
						  "[auth]\nkey_file = k.keys\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.auth);
	cr_expect_str_eq(c.backend, "fpga");
}

ParameterizedTestParameters(isthmusd_config, errors)
{
	return cr_make_param_array(
		struct bad_conf, bad_confs, sizeof(bad_confs) / sizeof(bad_confs[0]));
}

ParameterizedTest(struct bad_conf *b, isthmusd_config, errors)
{
	char text[1024], err[512] = "";
	struct isthd_config c;

	if (b->extra[0] == '!')
		snprintf(text, sizeof(text), "%s", b->extra + 1);
	else if (b->extra[0] == '@')
		snprintf(text, sizeof(text), "%s%s%s", GOOD_HEAD, b->extra + 1, GOOD_TAIL);
	else if (b->extra[0] == '%')
		snprintf(text, sizeof(text), "%s%s", GOOD, b->extra + 1);
	else
		snprintf(text, sizeof(text), "%s%s", GOOD, b->extra);
	if (b->extra[0] != '%' && strstr(text, "[auth]") == NULL)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "[auth]\nmode = off\n");
	cr_expect_lt(isthd_config_parse(text, "t.conf", &c, err, sizeof(err)), 0);
	cr_expect_str_eq(err, b->want);
}

Test(isthmusd_config, shipped_configs_load)
{
	static const char *const files[] = {
		"conf/isthmusd/example.conf",
	};
	struct isthd_config c;
	char err[512], path[1024];

	for (unsigned int i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", SOURCE_ROOT, files[i]);
		cr_expect_eq(isthd_config_load(path, &c, err, sizeof(err)), 0, "%s", err);
	}
}

/* [metrics] listen: off unless set; IPv4:PORT (0: any free port); a bad
 * value names file, line and key */
Test(isthmusd_config, metrics_listen)
{
	static const char *const bad[] = {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
		"localhost:9470", "::1:9470", "127.0.0.1:94x0", "1.2.3:9470", "on"};
	struct isthd_config c;
	char text[1024], err[512] = "";

	cr_assert_eq(
		isthd_config_parse(GOOD "[auth]\nmode = off\n", "t.conf", &c, err, sizeof(err)), 0,
		"%s", err);
	cr_expect(!c.metrics, "metrics on by default");
	cr_assert_eq(isthd_config_parse(GOOD "[auth]\nmode = off\n[metrics]\nlisten = "
					     "127.0.0.1:9470\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.metrics);
	cr_expect_eq(c.metrics_ip, 0x7f000001u);
	cr_expect_eq(c.metrics_port, 9470);
	cr_assert_eq(isthd_config_parse(GOOD "[auth]\nmode = off\n[metrics]\nlisten = "
					     "0.0.0.0:0\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(c.metrics && c.metrics_ip == 0 && c.metrics_port == 0);
	cr_assert_eq(isthd_config_parse(GOOD "[auth]\nmode = off\n[metrics]\nlisten = off\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect(!c.metrics);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), GOOD "[auth]\nmode = off\n[metrics]\nlisten = %s\n",
			bad[i]);
		cr_expect_lt(
			isthd_config_parse(text, "t.conf", &c, err, sizeof(err)), 0, "%s", bad[i]);
		/* GOOD is 15 lines, [auth] 2, [metrics] 1: listen is line 19 */
		cr_expect(strstr(err, "t.conf:19: [metrics] listen: '") != NULL, "%s: %s", bad[i],
			err);
	}
}

/* [auth] seq_ahead: a duration, 1 ms..60 s */
Test(isthmusd_config, auth_seq_ahead)
{
	struct isthd_config c;
	char err[512] = "";

	cr_assert_eq(isthd_config_parse(GOOD "[auth]\nkey_file = k.keys\nseq_ahead = 250ms\n",
			     "t.conf", &c, err, sizeof(err)),
		0, "%s", err);
	cr_expect_eq(c.seq_ahead_ns, 250000000ull);
	cr_expect_neq(isthd_config_parse(GOOD "[auth]\nkey_file = k.keys\nseq_ahead = 10us\n",
			      "t.conf", &c, err, sizeof(err)),
		0);
	cr_expect(strstr(err, "[auth] seq_ahead") != NULL, "%s", err);
	cr_expect_neq(isthd_config_parse(GOOD "[auth]\nkey_file = k.keys\nseq_ahead = 61s\n",
			      "t.conf", &c, err, sizeof(err)),
		0);
	cr_expect(strstr(err, "[auth] seq_ahead") != NULL, "%s", err);
	cr_expect_neq(isthd_config_parse(GOOD "[auth]\nkey_file = k.keys\nseq_ahead = 5\n",
			      "t.conf", &c, err, sizeof(err)),
		0, "a duration needs its unit");
}

/* [agg] max_abs: off, or a positive finite number */
Test(isthmusd_config, agg_max_abs)
{
	static const char *const bad[] = {"0", "-1", "inf", "nan", "1e99", "12x", "1e4 5"};
	struct isthd_config c;
	char text[1024], err[512] = "";

	snprintf(
		text, sizeof(text), "%s", GOOD "[agg]\nmax_abs = 1e4\n[auth]\nkey_file = k.keys\n");
	cr_assert_eq(isthd_config_parse(text, "t.conf", &c, err, sizeof(err)), 0, "%s", err);
	cr_expect(c.agg_max_abs_on);
	cr_expect_eq(c.agg_max_abs, 1e4f);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			GOOD "[agg]\nmax_abs = %s\n[auth]\nkey_file = k.keys\n", bad[i]);
		cr_expect_neq(isthd_config_parse(text, "t.conf", &c, err, sizeof(err)), 0, "'%s'",
			bad[i]);
		cr_expect(strstr(err, "[agg] max_abs") != NULL, "'%s': %s", bad[i], err);
	}
}
