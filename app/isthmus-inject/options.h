/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHMUS_INJECT_OPTIONS_H
#define ISTHMUS_INJECT_OPTIONS_H

/*
 * isthmus-inject's command line (options.c): every number decimal through
 * lib/text's one parser, hex only where --help says so.
 */
#include <stdbool.h>
#include <stdint.h>

#include "inject.h"

/* Everything the command line asks for. */
struct inject_args {
	struct inject_spec s;
	uint32_t to_ip, from_ip;
	uint16_t to_port, from_port;
	uint16_t port; /* replay: the capture's destination port to pick */
	uint64_t count, rate;
	bool have_to, have_from, have_count, have_elems;
	const char *key_file, *pcap_path; /* pcap_path: replay */
	int dir, owner; /* --key-file: enum isth_auth_dir, island */
	uint32_t islands;
};

/*
 * Fill @a from the command line (defaults for what it leaves out).
 * @return -1 to go on and send, else the exit status: 0 after --help,
 *         2 (a usage error) with the reason on stderr.
 */
int inject_args_parse(int argc, char **argv, struct inject_args *a);

#endif /* ISTHMUS_INJECT_OPTIONS_H */
