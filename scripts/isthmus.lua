-- SPDX-License-Identifier: BSD-3-Clause
--
-- Wireshark dissector for the isthmus wire protocol (doc/protocol.md,
-- lib/wire/isth_wire.h).
--
--   wireshark -X lua_script:scripts/isthmus.lua capture.pcap
--   tshark -X lua_script:scripts/isthmus.lua -r capture.pcap -Y isthmus
--   or copy it to ~/.local/lib/wireshark/plugins/
--
-- Registers on UDP port 9471, ISTH_WIRE_PORT (preference "isthmus.udp_port";
-- the tshark test fails if the two disagree). Should a deployment pick a
-- port another dissector owns (4791 is RoCEv2's), adding this dissector to
-- the "udp.port" table replaces that entry while the script is loaded.
--
-- Header fields are big-endian; DATA/AGG elements little-endian. Every check
-- of isth_wire_parse_msg() is repeated here: each problem found gets expert
-- info, and "isthmus.verdict" names the first one in the parser's order with
-- the parser's reason name ("ok" when the message is valid), so a capture
-- can be filtered with isthmus.verdict != "ok". The element and range limits
-- of the parser come from configuration; set the "islands" preference to
-- the job's island count for the island and bitmap checks.
--
-- Version 2 (authenticated, doc/protocol.md "Authenticated format (v2)"):
-- byte 21 is the key epoch; the trailer is one 16-byte AES-256-GMAC tag,
-- or, for per-receiver WAN tags, a receiver bitmap (u64, big-endian) and
-- one 16-byte tag per receiver in ascending receiver id order
-- (trailer_len = 8 + 16k). With a key file (the job file of master
-- keys, or a site's file of derived keys: doc/protocol.md "Key file"):
--
--   tshark -X lua_script:scripts/isthmus.lua -o isthmus.key_file:keys.conf ...
--
-- every tag is checked: isthmus.tag.status is "verified" (isthmus.tag.key
-- names the key: UP 2, DOWN 0, WAN 3, WAN 1>4), "WRONG", or "no key for
-- ..." (another job, an epoch the file lacks, an unreadable file, a key
-- a site file does not hold: WRONG only when every candidate key was
-- tried). A per-receiver tag is under K(e, 4, s, t) over the message
-- before the trailer, with the message's IV (an assumption of this
-- script until doc/protocol.md defines the layout's sealing).
-- Filter forged frames with isthmus.tag.status == "WRONG".

local bit = bit32 or bit

local HDR_SIZE = 40
local RANGE_SIZE = 16
local ROUND_SIZE = 40
local MAGIC = 0x4953
local VERSION = 1
local VERSION_AUTH = 2
local TAG_SIZE = 16

local DATA, AGG, NACK, GONE, ROUND = 1, 2, 3, 4, 5
local F_PARTIAL, F_RESENT, F_LAST, F_CHUNKS, F_AUTH = 0x1, 0x2, 0x4, 0x8, 0x10
local F_ECHO = 0x40 -- NACK by chunk: an echo (doc/protocol.md, "NACK echoes")

local type_names = {
	[DATA] = "DATA", [AGG] = "AGG", [NACK] = "NACK", [GONE] = "GONE",
	[ROUND] = "ROUND",
}
local dtype_names = { [0] = "none", [1] = "fp32", [2] = "bf16", [3] = "int32" }
local dtype_size = { [1] = 4, [2] = 2, [3] = 4 }
-- Flags each type may carry (isth_wire.h, enum isth_wire_flag).
local type_flags = {
	[DATA] = F_RESENT + F_LAST + F_AUTH,
	[AGG] = F_PARTIAL + F_RESENT + F_LAST + F_AUTH,
	[NACK] = F_CHUNKS + F_AUTH + F_ECHO,
	[GONE] = F_CHUNKS + F_AUTH,
	[ROUND] = F_AUTH,
}

-- ---- Tag verification: pure Lua (Wireshark 4.0's Lua API binds no
-- cipher or hash). SHA-256 (FIPS 180-4), HMAC (RFC 2104), HKDF (RFC
-- 5869), AES-256 (FIPS 197) and GHASH/GMAC (NIST SP 800-38D) on bit32
-- operations. Slow (a few ms per full frame) but only run with a key
-- file; checked against the RFC/NIST values by tests/wireshark.
local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot
local rshift, lshift, rrot = bit.rshift, bit.lshift, bit.rrotate
local sbyte, schar = string.byte, string.char

local K256 = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

local function be32(x)
	return schar(band(rshift(x, 24), 255), band(rshift(x, 16), 255),
		band(rshift(x, 8), 255), band(x, 255))
end

local function sha256(msg)
	local h = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f,
		0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }
	local bits = #msg * 8
	msg = msg .. "\128" .. string.rep("\0", (55 - #msg) % 64) ..
		be32(math.floor(bits / 4294967296)) .. be32(bits % 4294967296)
	local w = {}
	for i = 1, #msg, 64 do
		for j = 0, 15 do
			local a, b, c, d = sbyte(msg, i + 4 * j, i + 4 * j + 3)
			w[j] = ((a * 256 + b) * 256 + c) * 256 + d
		end
		for j = 16, 63 do
			local x, y = w[j - 15], w[j - 2]
			w[j] = band(w[j - 16] + w[j - 7] +
				bxor(rrot(x, 7), rrot(x, 18), rshift(x, 3)) +
				bxor(rrot(y, 17), rrot(y, 19), rshift(y, 10)), 0xffffffff)
		end
		local a, b, c, d, e, f, g, hh = h[1], h[2], h[3], h[4], h[5],
			h[6], h[7], h[8]
		for j = 0, 63 do
			local t1 = hh + bxor(rrot(e, 6), rrot(e, 11), rrot(e, 25)) +
				bxor(band(e, f), band(bnot(e), g)) + K256[j + 1] + w[j]
			local t2 = bxor(rrot(a, 2), rrot(a, 13), rrot(a, 22)) +
				bxor(band(a, b), band(a, c), band(b, c))
			hh, g, f, e = g, f, e, band(d + t1, 0xffffffff)
			d, c, b, a = c, b, a, band(t1 + t2, 0xffffffff)
		end
		h[1], h[2] = band(h[1] + a, 0xffffffff), band(h[2] + b, 0xffffffff)
		h[3], h[4] = band(h[3] + c, 0xffffffff), band(h[4] + d, 0xffffffff)
		h[5], h[6] = band(h[5] + e, 0xffffffff), band(h[6] + f, 0xffffffff)
		h[7], h[8] = band(h[7] + g, 0xffffffff), band(h[8] + hh, 0xffffffff)
	end
	local out = {}
	for i = 1, 8 do
		out[i] = be32(h[i])
	end
	return table.concat(out)
end

local function xor_pad(key, v)
	local t = {}
	for i = 1, 64 do
		t[i] = schar(bxor(sbyte(key, i) or 0, v))
	end
	return table.concat(t)
end

local function hmac_sha256(key, msg)
	if #key > 64 then
		key = sha256(key)
	end
	return sha256(xor_pad(key, 0x5c) .. sha256(xor_pad(key, 0x36) .. msg))
end

local function hkdf_sha256(ikm, salt, info, len)
	local prk = hmac_sha256(salt, ikm)
	local t, okm = "", {}
	for i = 1, math.ceil(len / 32) do
		t = hmac_sha256(prk, t .. info .. schar(i))
		okm[i] = t
	end
	return table.concat(okm):sub(1, len)
end

-- AES: the S-box from the multiplicative inverse (FIPS 197 5.1.1),
-- generated rather than typed in.
local sbox, xtime = { [0] = 0x63 }, {}
do
	local function rotl8(x, n)
		return band(bor(lshift(x, n), rshift(x, 8 - n)), 0xff)
	end
	local p, q = 1, 1
	repeat
		p = band(bxor(p, lshift(p, 1), band(p, 0x80) ~= 0 and 0x1b or 0),
			0xff)
		q = band(bxor(q, lshift(q, 1)), 0xff)
		q = band(bxor(q, lshift(q, 2)), 0xff)
		q = band(bxor(q, lshift(q, 4)), 0xff)
		if band(q, 0x80) ~= 0 then
			q = bxor(q, 0x09)
		end
		sbox[p] = bxor(q, rotl8(q, 1), rotl8(q, 2), rotl8(q, 3),
			rotl8(q, 4), 0x63)
	until p == 1
	for i = 0, 255 do
		xtime[i] = band(bxor(lshift(i, 1), band(i, 0x80) ~= 0 and 0x1b or 0),
			0xff)
	end
end

-- AES-256 round keys: 60 words (Nk = 8, Nr = 14).
local function aes256_expand(key)
	local w = {}
	for i = 0, 7 do
		local a, b, c, d = sbyte(key, 4 * i + 1, 4 * i + 4)
		w[i] = ((a * 256 + b) * 256 + c) * 256 + d
	end
	local rcon = 1
	for i = 8, 59 do
		local t = w[i - 1]
		if i % 8 == 0 then
			t = bor(lshift(t, 8), rshift(t, 24))
			t = bxor(lshift(sbox[rshift(t, 24)], 24),
				lshift(sbox[band(rshift(t, 16), 255)], 16),
				lshift(sbox[band(rshift(t, 8), 255)], 8),
				sbox[band(t, 255)], lshift(rcon, 24))
			rcon = xtime[rcon]
		elseif i % 8 == 4 then
			t = bxor(lshift(sbox[rshift(t, 24)], 24),
				lshift(sbox[band(rshift(t, 16), 255)], 16),
				lshift(sbox[band(rshift(t, 8), 255)], 8),
				sbox[band(t, 255)])
		end
		w[i] = bxor(w[i - 8], t)
	end
	return w
end

-- One block (a 16-byte string) encrypted with round keys @w.
local function aes256_block(w, inp)
	local s = { sbyte(inp, 1, 16) }
	local function add_key(r)
		for c = 0, 3 do
			local k = w[4 * r + c]
			for i = 0, 3 do
				local j = 4 * c + i + 1
				s[j] = bxor(s[j], band(rshift(k, 24 - 8 * i), 255))
			end
		end
	end
	add_key(0)
	for r = 1, 14 do
		local t = {}
		for c = 0, 3 do
			for i = 0, 3 do -- SubBytes and ShiftRows
				t[4 * c + i + 1] = sbox[s[4 * ((c + i) % 4) + i + 1]]
			end
		end
		if r < 14 then
			for c = 0, 3 do -- MixColumns
				local o = 4 * c
				local a0, a1, a2, a3 = t[o + 1], t[o + 2], t[o + 3], t[o + 4]
				local x = bxor(a0, a1, a2, a3)
				t[o + 1] = bxor(a0, x, xtime[bxor(a0, a1)])
				t[o + 2] = bxor(a1, x, xtime[bxor(a1, a2)])
				t[o + 3] = bxor(a2, x, xtime[bxor(a2, a3)])
				t[o + 4] = bxor(a3, x, xtime[bxor(a3, a0)])
			end
		end
		s = t
		add_key(r)
	end
	return schar((table.unpack or unpack)(s))
end

local function words4(s, i)
	local r = {}
	for j = 0, 3 do
		local a, b, c, d = sbyte(s, i + 4 * j, i + 4 * j + 3)
		r[j + 1] = ((a * 256 + b) * 256 + c) * 256 + d
	end
	return r
end

-- GHASH tables of one key: for each of the 32 nibbles of a block and each
-- nibble value, that nibble times H (SP 800-38D 6.3, bit 0 = the most
-- significant bit of byte 0), as four 32-bit words.
local function ghash_tables(h)
	local v = { words4(h, 1) }
	for i = 1, 127 do -- v[i + 1] = H * x^i: one right shift, reduced
		local p = v[i]
		local lsb = band(p[4], 1)
		local n = {
			rshift(p[1], 1),
			bor(rshift(p[2], 1), lshift(band(p[1], 1), 31)),
			bor(rshift(p[3], 1), lshift(band(p[2], 1), 31)),
			bor(rshift(p[4], 1), lshift(band(p[3], 1), 31)),
		}
		if lsb == 1 then
			n[1] = bxor(n[1], 0xe1000000)
		end
		v[i + 1] = n
	end
	local t1, t2, t3, t4 = {}, {}, {}, {}
	for q = 0, 31 do
		for n = 0, 15 do
			local a, b, c, d = 0, 0, 0, 0
			for j = 0, 3 do
				if band(rshift(n, 3 - j), 1) == 1 then
					local x = v[4 * q + j + 1]
					a, b, c, d = bxor(a, x[1]), bxor(b, x[2]),
						bxor(c, x[3]), bxor(d, x[4])
				end
			end
			local k = q * 16 + n
			t1[k], t2[k], t3[k], t4[k] = a, b, c, d
		end
	end
	return { t1, t2, t3, t4 }
end

-- AES-256-GMAC (GCM with an empty plaintext): the 16-byte tag of @aad
-- under the key context @k (from gmac_key) and the 12-byte @iv.
local function gmac(k, iv, aad)
	local t1, t2, t3, t4 = k.t[1], k.t[2], k.t[3], k.t[4]
	local y1, y2, y3, y4 = 0, 0, 0, 0
	local function mul(x1, x2, x3, x4)
		local z1, z2, z3, z4 = 0, 0, 0, 0
		local xs = { x1, x2, x3, x4 }
		for wi = 1, 4 do
			local x = xs[wi]
			for ni = 0, 7 do
				local n = band(rshift(x, 28 - 4 * ni), 15)
				if n ~= 0 then
					local idx = ((wi - 1) * 8 + ni) * 16 + n
					z1, z2 = bxor(z1, t1[idx]), bxor(z2, t2[idx])
					z3, z4 = bxor(z3, t3[idx]), bxor(z4, t4[idx])
				end
			end
		end
		return z1, z2, z3, z4
	end
	local len = #aad
	local padded = aad .. string.rep("\0", (16 - len % 16) % 16)
	for i = 1, #padded, 16 do
		local b = words4(padded, i)
		y1, y2, y3, y4 = mul(bxor(y1, b[1]), bxor(y2, b[2]),
			bxor(y3, b[3]), bxor(y4, b[4]))
	end
	local bits = len * 8
	y1, y2, y3, y4 = mul(bxor(y1, math.floor(bits / 4294967296)),
		bxor(y2, bits % 4294967296), y3, y4)
	local e = words4(aes256_block(k.w, iv .. "\0\0\0\1"), 1)
	return be32(bxor(y1, e[1])) .. be32(bxor(y2, e[2])) ..
		be32(bxor(y3, e[3])) .. be32(bxor(y4, e[4]))
end

local function gmac_key(key)
	local w = aes256_expand(key)
	return { w = w, t = ghash_tables(aes256_block(w, string.rep("\0", 16))) }
end

local function tohex(s)
	return (s:gsub(".", function(c)
		return string.format("%02x", sbyte(c))
	end))
end

local function fromhex(h)
	return (h:gsub("%x%x", function(x)
		return schar(tonumber(x, 16))
	end))
end

-- For tests/wireshark/crypto_selftest.lua: the primitives against their
-- RFC/NIST values.
_G.isthmus_crypto = {
	sha256 = sha256, hmac_sha256 = hmac_sha256, hkdf_sha256 = hkdf_sha256,
	aes256_expand = aes256_expand, aes256_block = aes256_block,
	gmac_key = gmac_key, gmac = gmac, tohex = tohex, fromhex = fromhex,
}

local p = Proto("isthmus", "isthmus wire protocol")

local f = {
	magic = ProtoField.uint16("isthmus.magic", "Magic", base.HEX),
	version = ProtoField.uint8("isthmus.version", "Version", base.DEC),
	type = ProtoField.uint8("isthmus.type", "Type", base.DEC, type_names),
	flags = ProtoField.uint16("isthmus.flags", "Flags", base.HEX),
	f_partial = ProtoField.bool("isthmus.flags.partial", "Partial", 16,
		nil, F_PARTIAL, "AGG: bitmap is not the expected set"),
	f_resent = ProtoField.bool("isthmus.flags.resent", "Resent", 16,
		nil, F_RESENT, "a retransmission"),
	f_last = ProtoField.bool("isthmus.flags.last", "Last", 16,
		nil, F_LAST, "last chunk of the stream"),
	f_chunks = ProtoField.bool("isthmus.flags.chunks", "Chunk ranges", 16,
		nil, F_CHUNKS, "NACK/GONE: ranges are chunk ids, not sequences"),
	f_auth = ProtoField.bool("isthmus.flags.auth", "Auth trailer", 16,
		nil, F_AUTH, "an authentication trailer follows the payload"),
	f_echo = ProtoField.bool("isthmus.flags.echo", "Echo", 16,
		nil, F_ECHO, "NACK by chunk: an echo of the NACK its chunk field tags"),
	f_unknown = ProtoField.uint16("isthmus.flags.unknown", "Unknown flags",
		base.HEX, nil, 0x0fa0),
	f_stream = ProtoField.uint16("isthmus.flags.stream", "AGG stream",
		base.DEC, nil, 0xf000,
		"AGG, NACK/GONE by seq: stream index; ROUND: streams - 1"),
	dtype = ProtoField.uint8("isthmus.dtype", "Element type", base.DEC,
		dtype_names),
	trailer_len = ProtoField.uint8("isthmus.trailer_len", "Trailer length",
		base.DEC),
	job = ProtoField.uint32("isthmus.job", "Job", base.DEC),
	round = ProtoField.uint32("isthmus.round", "Round", base.DEC),
	chunk = ProtoField.uint32("isthmus.chunk", "Chunk", base.DEC),
	sender = ProtoField.uint8("isthmus.sender", "Sender island", base.DEC),
	reserved = ProtoField.uint8("isthmus.reserved", "Reserved", base.HEX),
	epoch = ProtoField.uint8("isthmus.epoch", "Key epoch", base.DEC),
	count = ProtoField.uint16("isthmus.count", "Count", base.DEC),
	seq = ProtoField.uint64("isthmus.seq", "Sequence", base.DEC),
	bitmap = ProtoField.uint64("isthmus.bitmap", "Bitmap", base.HEX),
	island = ProtoField.uint8("isthmus.island", "Island", base.DEC),
	payload = ProtoField.bytes("isthmus.payload", "Payload"),
	fp32 = ProtoField.float("isthmus.fp32", "fp32"),
	bf16 = ProtoField.float("isthmus.bf16", "bf16"),
	int32 = ProtoField.int32("isthmus.int32", "int32", base.DEC),
	range = ProtoField.bytes("isthmus.range", "Range"),
	range_first = ProtoField.uint64("isthmus.range.first", "First", base.DEC),
	range_last = ProtoField.uint64("isthmus.range.last", "Last", base.DEC),
	r_start = ProtoField.uint64("isthmus.round.start_ns", "Start (ns)",
		base.DEC),
	r_deadline = ProtoField.uint64("isthmus.round.deadline_ns",
		"Deadline (ns)", base.DEC),
	r_period = ProtoField.uint64("isthmus.round.period_ns", "Period (ns)",
		base.DEC),
	r_clique = ProtoField.uint64("isthmus.round.clique", "Clique", base.HEX),
	r_clique_island = ProtoField.uint8("isthmus.round.clique_island",
		"Clique member", base.DEC),
	r_n_chunks = ProtoField.uint32("isthmus.round.n_chunks", "Chunks",
		base.DEC),
	r_chunk_elems = ProtoField.uint32("isthmus.round.chunk_elems",
		"Elements per chunk", base.DEC),
	trailer = ProtoField.bytes("isthmus.trailer", "Auth trailer"),
	receivers = ProtoField.uint64("isthmus.trailer.receivers",
		"Receivers", base.HEX),
	receiver = ProtoField.uint8("isthmus.trailer.receiver", "Receiver",
		base.DEC),
	tag = ProtoField.bytes("isthmus.tag", "Tag"),
	tag_status = ProtoField.string("isthmus.tag.status", "Tag"),
	tag_key = ProtoField.string("isthmus.tag.key", "Tag key"),
	verdict = ProtoField.string("isthmus.verdict", "Verdict"),
}
local fl = {}
for _, v in pairs(f) do
	fl[#fl + 1] = v
end
p.fields = fl

-- One expert per parser reason, named like isth_wire_reason_name().
local reasons = {
	"hdr_trunc", "magic", "version", "type", "flags", "dtype", "island",
	"bitmap", "count", "trailer", "length", "range", "reserved", "round_body",
}
local e = {}
local el = {}
for _, r in ipairs(reasons) do
	e[r] = ProtoExpert.new("isthmus.malformed." .. r, "Malformed: " .. r,
		expert.group.MALFORMED, expert.severity.ERROR)
	el[#el + 1] = e[r]
end
e.partial = ProtoExpert.new("isthmus.partial", "Partial aggregate",
	expert.group.SEQUENCE, expert.severity.NOTE)
e.resent = ProtoExpert.new("isthmus.resent", "Retransmission",
	expert.group.SEQUENCE, expert.severity.NOTE)
e.tag_wrong = ProtoExpert.new("isthmus.tag.wrong", "Tag does not verify",
	expert.group.SECURITY, expert.severity.WARN)
e.tag_epoch = ProtoExpert.new("isthmus.tag.epoch",
	"Key epoch is not the round's", expert.group.SECURITY,
	expert.severity.WARN)
e.tag_nokey = ProtoExpert.new("isthmus.tag.nokey", "Tag not checked",
	expert.group.SECURITY, expert.severity.NOTE)
el[#el + 1] = e.partial
el[#el + 1] = e.resent
el[#el + 1] = e.tag_wrong
el[#el + 1] = e.tag_epoch
el[#el + 1] = e.tag_nokey
p.experts = el

p.prefs.udp_port = Pref.uint("UDP port", 9471,
	"UDP port of the isthmus protocol (ISTH_WIRE_PORT)")
p.prefs.islands = Pref.uint("Islands", 64,
	"Islands in the job (1..64): sender and bitmaps must name fewer")
p.prefs.elems_shown = Pref.uint("Elements shown", 8,
	"DATA/AGG elements decoded per packet (the rest is shown as bytes)")
p.prefs.key_file = Pref.string("Key file", "",
	"The job's key file (doc/protocol.md, \"Key file\"): version 2 tags "
	.. "are verified with it")

-- A 64-bit field as two 32-bit halves: Lua 5.2 numbers are doubles.
local function halves(tvb, off)
	return tvb(off, 4):uint(), tvb(off + 4, 4):uint()
end

local function has_bit(hi, lo, i)
	if i >= 32 then
		return bit.band(bit.rshift(hi, i - 32), 1) == 1
	end
	return bit.band(bit.rshift(lo, i), 1) == 1
end

-- Do hi:lo name an island >= n?
local function outside(hi, lo, n)
	if n >= 64 then
		return false
	end
	if n >= 32 then
		return bit.rshift(hi, n - 32) ~= 0
	end
	return hi ~= 0 or bit.rshift(lo, n) ~= 0
end

local function list_islands(tree, field, tvb, off, hi, lo)
	local ids = {}
	for i = 0, 63 do
		if has_bit(hi, lo, i) then
			tree:add(field, tvb(off, 8), i):set_generated()
			ids[#ids + 1] = tostring(i)
		end
	end
	return ids
end

local function bf16_value(b)
	local s = bit.rshift(b, 15) == 1 and -1 or 1
	local ex = bit.band(bit.rshift(b, 7), 0xff)
	local m = bit.band(b, 0x7f)
	if ex == 0xff then
		if m ~= 0 then
			return 0 / 0
		end
		return s * math.huge
	end
	if ex == 0 then
		return s * m / 128 * 2 ^ -126
	end
	return s * (1 + m / 128) * 2 ^ (ex - 127)
end

local function u64_lt(ahi, alo, bhi, blo)
	return ahi < bhi or (ahi == bhi and alo < blo)
end

-- ---- Key file and tag checks (doc/protocol.md, "Keys", "Key file")

local DIR_UP, DIR_DOWN, DIR_WAN, DIR_WAN_PAIR = 1, 2, 3, 4
local dir_names = { "UP", "DOWN", "WAN", "WAN" }

-- The key file, read again when the preference names another file.
-- Either the job file (masters: every key derives from them) or a site
-- file (one island's or edge's derived keys only: "site island|edge I",
-- "epoch E round R", then "key up|down HEX" and "key wan S HEX" for the
-- epoch above), doc/protocol.md "Key file". Loaded:
-- { job =, epochs = { {id =, start =, master = | keys = {["dir/owner"] =}} } }
-- or { err = }. Numbers are decimal digits, as lib/auth reads them.
local keys = { path = "" }
local derived = {}

local function key_line(k, toks)
	local ep = k.epochs[#k.epochs]
	local hex = toks[#toks]
	if ep == nil or ep.keys == nil or #hex ~= 64 or hex:find("%X") then
		return false
	end
	if (toks[2] == "up" or toks[2] == "down") and #toks == 3 then
		ep.keys[(toks[2] == "up" and DIR_UP or DIR_DOWN) .. "/" .. k.site] =
			fromhex(hex)
		return true
	elseif toks[2] == "wan" and #toks == 4 and toks[3]:find("^%d+$") then
		ep.keys[DIR_WAN .. "/" .. tonumber(toks[3])] = fromhex(hex)
		return true
	elseif toks[2] == "pair" and #toks == 5 and toks[3]:find("^%d+$") and
	       toks[4]:find("^%d+$") then
		-- an edge's pairwise WAN keys: K(e, 4, S, T), S or T the edge
		ep.keys[DIR_WAN_PAIR .. "/" .. tonumber(toks[3]) .. "/" ..
			tonumber(toks[4])] = fromhex(hex)
		return true
	end
	return false
end

local function keys_line(k, toks)
	local num = function(i)
		return toks[i] ~= nil and toks[i]:find("^%d+$") and tonumber(toks[i])
	end
	if toks[1] == "job" and #toks == 2 and num(2) then
		k.job = num(2)
	elseif toks[1] == "site" and #toks == 3 and num(3) and
	       (toks[2] == "island" or toks[2] == "edge") then
		k.site, k.site_kind = num(3), toks[2]
	elseif toks[1] == "epoch" and #toks == 6 and toks[3] == "round" and
	       toks[5] == "key" and num(2) and num(4) and #toks[6] == 64 and
	       not toks[6]:find("%X") and k.site == nil then
		k.epochs[#k.epochs + 1] = { id = num(2), start = num(4),
			master = fromhex(toks[6]) }
	elseif toks[1] == "epoch" and #toks == 4 and toks[3] == "round" and
	       num(2) and num(4) and k.site ~= nil then
		k.epochs[#k.epochs + 1] = { id = num(2), start = num(4), keys = {} }
	elseif toks[1] == "key" then
		return key_line(k, toks)
	else
		return false
	end
	return true
end

local function load_keys(path)
	local k = { path = path, epochs = {} }
	local fh, msg = io.open(path, "rb")
	if fh == nil then
		k.err = msg
		return k
	end
	local n = 0
	for line in fh:lines() do
		n = n + 1
		local toks = {}
		for w in line:gsub("#.*", ""):gmatch("%S+") do
			toks[#toks + 1] = w
		end
		if #toks > 0 and not keys_line(k, toks) then
			k.err = string.format("%s:%d: not a line of a key file", path, n)
			break
		end
	end
	fh:close()
	if k.err == nil and (k.job == nil or #k.epochs == 0) then
		k.err = path .. ": no job line or no epoch line"
	end
	return k
end

-- K(e, dir, owner) (dir 1..3) or K(e, 4, s, t) (the WAN key of edge s
-- for receiver t) as a GMAC key context: derived once from the job
-- file's master, or taken from a site file; nil if a site file lacks it.
local function dir_key(ep, job, dir, s, t)
	local id = string.format("%u/%u/%u/%u/%u", job, ep.id, dir, s, t or 256)
	if derived[id] == nil then
		local key
		if ep.master then
			local info = "isthmus/v2 gmac" .. be32(job) ..
				schar(ep.id, dir, s) .. (t and schar(t) or "")
			key = hkdf_sha256(ep.master, "isthmus/v2", info, 32)
		elseif t == nil then
			key = ep.keys[dir .. "/" .. s]
		else
			key = ep.keys[dir .. "/" .. s .. "/" .. t]
		end
		derived[id] = key and gmac_key(key) or false
	end
	return derived[id] or nil
end

-- The keys a 16-byte tag of this type may be under (doc/protocol.md,
-- "Keys": the capture does not say which link a frame was on).
local function candidates(ty, flags)
	local chunks = bit.band(flags, F_CHUNKS) ~= 0
	if ty == DATA then
		return { DIR_UP, DIR_WAN }
	elseif ty == NACK then
		return { chunks and DIR_WAN or DIR_UP }
	elseif ty == GONE then
		return { DIR_DOWN, DIR_WAN }
	end
	return { DIR_DOWN }
end

-- Check the tags of a sound version 2 message: add status and key items
-- to @tt and return the status for the info column.
local function check_tags(tvb, tt, tlen, rcv)
	local path = p.prefs.key_file
	if path == nil or path == "" then
		return nil
	end
	if keys.path ~= path then
		keys = load_keys(path)
		derived = {}
	end
	local len = tvb:len()
	local job, rnd = tvb(8, 4):uint(), tvb(12, 4):uint()
	local ty, flags = tvb(3, 1):uint(), tvb(4, 2):uint()
	local sender, eid = tvb(20, 1):uint(), tvb(21, 1):uint()
	local nokey
	local ep, cur
	for _, x in ipairs(keys.epochs or {}) do
		if x.id == eid then
			ep = x
		end
		if x.start <= rnd then
			cur = x
		end
	end
	if keys.err then
		nokey = "no key: " .. keys.err
	elseif keys.job ~= job then
		nokey = string.format("no key for job %u (the file's is %u)", job,
			keys.job)
	elseif ep == nil then
		nokey = string.format("no key for epoch %u", eid)
	end
	if nokey then
		local it = tt:add(f.tag_status, nokey)
		it:set_generated()
		it:add_proto_expert_info(e.tag_nokey, nokey)
		return "nokey"
	end
	if cur == nil or cur.id ~= eid then
		tt:add_proto_expert_info(e.tag_epoch, string.format(
			"epoch %u, but round %u is %s's (auth_epoch)", eid, rnd,
			cur and ("epoch " .. cur.id) or "no epoch"))
	end
	local aad = tvb:raw(0, len - tlen)
	local iv = tvb:raw(3, 1) .. tvb:raw(20, 1) .. tvb:raw(4, 2) ..
		tvb:raw(24, 8)
	local all = "verified"
	local function one(off, keylist)
		local tag = tvb:raw(off, TAG_SIZE)
		local status, name, lack = "WRONG", {}, {}
		for _, c in ipairs(keylist) do
			local k = dir_key(ep, job, c[1], c[2], c[3])
			if k == nil then
				lack[#lack + 1] = c.name
			elseif gmac(k, iv, aad) == tag then
				status, name = "verified", { c.name }
				break
			else
				name[#name + 1] = c.name
			end
		end
		-- a site file may lack the key the tag is under: then the tag
		-- cannot be judged, it is not WRONG
		if status ~= "verified" and #lack > 0 then
			status = "no key for " .. table.concat(lack, "/")
			name = {}
		end
		local it = tt:add(f.tag_status, tvb(off, TAG_SIZE), status)
		it:set_generated()
		tt:add(f.tag_key, tvb(off, TAG_SIZE),
			table.concat(name, "/")):set_generated()
		if status == "WRONG" then
			all = "WRONG"
			it:add_proto_expert_info(e.tag_wrong, "tag WRONG (tried " ..
				table.concat(name, "/") .. ")")
		elseif status ~= "verified" then
			all = all == "WRONG" and all or "nokey"
			it:add_proto_expert_info(e.tag_nokey, status)
		end
	end
	if rcv == nil then
		local kl = {}
		for _, d in ipairs(candidates(ty, flags)) do
			kl[#kl + 1] = { d, sender, nil,
				name = dir_names[d] .. " " .. sender }
		end
		one(len - TAG_SIZE, kl)
	else
		for i, t in ipairs(rcv) do
			one(len - tlen + 8 + (i - 1) * TAG_SIZE, { { DIR_WAN_PAIR,
				sender, t, name = "WAN " .. sender .. ">" .. t } })
		end
	end
	return all
end

-- Receiver ids of a per-receiver trailer's bitmap, ascending.
local function receivers(tvb, off)
	local hi, lo = tvb(off, 4):uint(), tvb(off + 4, 4):uint()
	local r = {}
	for i = 0, 63 do
		if has_bit(hi, lo, i) then
			r[#r + 1] = i
		end
	end
	return r
end

-- A version 2 trailer: one tag, or receiver bitmap and a tag per
-- receiver. Returns the receiver list (nil for one tag).
local function v2_trailer(tvb, t, tlen)
	local len = tvb:len()
	local tt = t:add(f.trailer, tvb(len - tlen, tlen))
	if tlen == TAG_SIZE then
		tt:set_text("Tag: " .. tohex(tvb:raw(len - tlen, tlen)))
		tt:add(f.tag, tvb(len - tlen, tlen))
		return tt, nil
	end
	local rcv = receivers(tvb, len - tlen)
	local names = {}
	local rt = tt:add(f.receivers, tvb(len - tlen, 8))
	for _, r in ipairs(rcv) do
		rt:add(f.receiver, tvb(len - tlen, 8), r):set_generated()
		names[#names + 1] = tostring(r)
	end
	tt:set_text("Tags for receivers " .. table.concat(names, ","))
	for i, r in ipairs(rcv) do
		tt:add(f.tag, tvb(len - tlen + 8 + (i - 1) * TAG_SIZE, TAG_SIZE))
			:append_text(" (receiver " .. r .. ")")
	end
	return tt, rcv
end

-- Is @tlen a version 2 trailer layout: one tag, or 8 + 16k bytes whose
-- bitmap names k receivers? Returns nil or what is wrong.
local function v2_trailer_bad(tvb, tlen)
	if tlen == TAG_SIZE then
		return nil
	end
	if tlen < 8 + TAG_SIZE or (tlen - 8) % TAG_SIZE ~= 0 then
		return string.format("trailer of %d bytes: version 2 has 16 "
			.. "(one tag) or 8 + 16k (receivers and their tags)", tlen)
	end
	local k = (tlen - 8) / TAG_SIZE
	local n = #receivers(tvb, tvb:len() - tlen)
	if n ~= k then
		return string.format("trailer of %d tags for %d receivers", k, n)
	end
	return nil
end

function p.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	if len == 0 then
		return 0
	end
	pinfo.cols.protocol = "isthmus"
	local t = tree:add(p, tvb(), "isthmus")
	local verdict
	local function fail(item, reason, text)
		item:add_proto_expert_info(e[reason], text)
		verdict = verdict or reason
	end

	if len < HDR_SIZE then
		t:add(f.payload, tvb())
		fail(t, "hdr_trunc", string.format(
			"%d bytes, shorter than the %d-byte header", len, HDR_SIZE))
		t:add(f.verdict, verdict):set_generated()
		pinfo.cols.info = "isthmus [truncated header]"
		return len
	end

	local n_islands = p.prefs.islands
	if n_islands < 1 or n_islands > 64 then
		n_islands = 64
	end

	local magic = tvb(0, 2):uint()
	local version = tvb(2, 1):uint()
	local ty = tvb(3, 1):uint()
	local flags = tvb(4, 2):uint()
	local dtype = tvb(6, 1):uint()
	local tlen = tvb(7, 1):uint()
	local job = tvb(8, 4):uint()
	local rnd = tvb(12, 4):uint()
	local chunk = tvb(16, 4):uint()
	local sender = tvb(20, 1):uint()
	local reserved = tvb(21, 1):uint()
	local count = tvb(22, 2):uint()
	local bm_hi, bm_lo = halves(tvb, 32)

	local it = t:add(f.magic, tvb(0, 2))
	if magic ~= MAGIC then
		fail(it, "magic", string.format("magic 0x%04x, not 0x%04x (\"IS\")",
			magic, MAGIC))
	end
	it = t:add(f.version, tvb(2, 1))
	local v2 = version == VERSION_AUTH
	if version ~= VERSION and not v2 then
		fail(it, "version", "unsupported version " .. version)
	end
	it = t:add(f.type, tvb(3, 1))
	local known = type_names[ty] ~= nil
	if not known then
		fail(it, "type", "unknown type " .. ty)
	end
	local ft = t:add(f.flags, tvb(4, 2))
	ft:add(f.f_partial, tvb(4, 2))
	ft:add(f.f_resent, tvb(4, 2))
	ft:add(f.f_last, tvb(4, 2))
	ft:add(f.f_chunks, tvb(4, 2))
	ft:add(f.f_auth, tvb(4, 2))
	ft:add(f.f_echo, tvb(4, 2))
	ft:add(f.f_unknown, tvb(4, 2))
	ft:add(f.f_stream, tvb(4, 2))
	-- bits 12..15 are the AGG stream field (doc/protocol.md, "AGG
	-- streams"): never on DATA or chunk ranges; its bound is the
	-- receiver's stream count, which a capture does not know
	local stream = bit.rshift(flags, 12)
	flags = bit.band(flags, 0x0fff)
	if known and stream ~= 0 and (ty == DATA or bit.band(flags, F_CHUNKS) ~= 0) then
		fail(ft, "flags", string.format("stream %d on %s%s", stream,
			type_names[ty], ty == DATA and "" or " by chunk"))
	end
	if known and bit.band(flags, bit.bnot(type_flags[ty])) ~= 0 then
		fail(ft, "flags", string.format("flags 0x%04x not valid for %s",
			flags, type_names[ty]))
	end
	it = t:add(f.dtype, tvb(6, 1))
	if known then
		if ty == DATA or ty == AGG then
			if dtype_size[dtype] == nil then
				fail(it, "dtype", "DATA/AGG need fp32, bf16 or int32")
			end
		elseif dtype ~= 0 then
			fail(it, "dtype", type_names[ty] .. " carries no elements")
		end
	end
	local it_tlen = t:add(f.trailer_len, tvb(7, 1))
	t:add(f.job, tvb(8, 4))
	t:add(f.round, tvb(12, 4))
	t:add(f.chunk, tvb(16, 4))
	it = t:add(f.sender, tvb(20, 1))
	if sender >= n_islands then
		fail(it, "island", string.format("island %d, job has %d",
			sender, n_islands))
	end
	-- version 2: byte 21 is the key epoch, any value
	if v2 then
		t:add(f.epoch, tvb(21, 1))
	else
		it = t:add(f.reserved, tvb(21, 1))
		if reserved ~= 0 then
			fail(it, "reserved", "reserved byte must be zero")
		end
	end
	local trailer_ok = true
	if (tlen ~= 0) ~= (bit.band(flags, F_AUTH) ~= 0) or
	   tlen > len - HDR_SIZE then
		trailer_ok = false
		fail(it_tlen, "trailer", string.format(
			"trailer of %d bytes with auth flag %s, %d bytes after the header",
			tlen, bit.band(flags, F_AUTH) ~= 0 and "set" or "clear",
			len - HDR_SIZE))
		if tlen > len - HDR_SIZE then
			tlen = 0
		end
	end
	if v2 and trailer_ok then
		local bad = tlen == 0 and "version 2 needs AUTH and a trailer" or
			v2_trailer_bad(tvb, tlen)
		if bad then
			fail(it_tlen, "trailer", bad)
			trailer_ok = false
		end
	end
	local it_count = t:add(f.count, tvb(22, 2))
	t:add(f.seq, tvb(24, 8))
	local bt = t:add(f.bitmap, tvb(32, 8))
	local ids = list_islands(bt, f.island, tvb, 32, bm_hi, bm_lo)
	bt:append_text(" (islands: " .. (#ids > 0 and table.concat(ids, ",")
		or "none") .. ")")

	local body = len - HDR_SIZE - tlen
	local info = string.format("%s job=%u round=%u chunk=%u sender=%u",
		type_names[ty] or ("type " .. ty), job, rnd, chunk, sender)

	-- The body, checked in the parser's order: count, length, bitmap, ...
	if ty == DATA or ty == AGG then
		local es = dtype_size[dtype]
		if count == 0 then
			fail(it_count, "count", "no elements")
		end
		if es ~= nil and body ~= count * es then
			fail(it_count, "length", string.format(
				"%d elements of %d bytes need %d bytes, payload has %d",
				count, es, count * es, body))
		end
		if ty == DATA and not (sender < 64 and has_bit(bm_hi, bm_lo, sender)
		   and #ids == 1) then
			fail(bt, "bitmap", "a DATA bitmap is exactly its sender's bit")
		end
		if #ids == 0 or outside(bm_hi, bm_lo, n_islands) then
			fail(bt, "bitmap", "empty, or names islands the job lacks")
		end
		if body > 0 then
			local pt = t:add(f.payload, tvb(HDR_SIZE, body))
			pt:set_text(string.format("Elements: %d x %s (%d bytes)",
				count, dtype_names[dtype] or "?", body))
			if es ~= nil then
				local shown = math.min(p.prefs.elems_shown,
					math.floor(body / es))
				for i = 0, shown - 1 do
					local r = tvb(HDR_SIZE + i * es, es)
					if dtype == 1 then
						pt:add_le(f.fp32, r)
					elseif dtype == 2 then
						pt:add(f.bf16, r, bf16_value(r:le_uint()))
					else
						pt:add_le(f.int32, r)
					end
				end
			end
		end
		info = info .. string.format(" seq=%s n=%d %s",
			tostring(tvb(24, 8):uint64()), count, dtype_names[dtype] or "?")
		if ty == AGG and bit.band(flags, F_PARTIAL) ~= 0 then
			bt:add_proto_expert_info(e.partial)
		end
		if bit.band(flags, F_RESENT) ~= 0 then
			ft:add_proto_expert_info(e.resent)
		end
	elseif ty == NACK or ty == GONE then
		if count == 0 then
			fail(it_count, "count", "no ranges")
		end
		if body ~= count * RANGE_SIZE then
			fail(it_count, "length", string.format(
				"%d ranges need %d bytes, payload has %d",
				count, count * RANGE_SIZE, body))
		end
		if outside(bm_hi, bm_lo, n_islands) then
			fail(bt, "bitmap", "names islands the job lacks")
		end
		local chunks = bit.band(flags, F_CHUNKS) ~= 0
		local n = math.min(count, math.floor(body / RANGE_SIZE))
		for i = 0, n - 1 do
			local o = HDR_SIZE + i * RANGE_SIZE
			local fh, flo = halves(tvb, o)
			local lh, llo = halves(tvb, o + 8)
			local rt = t:add(f.range, tvb(o, RANGE_SIZE))
			rt:set_text(string.format("%s range %d: %s-%s",
				chunks and "Chunk" or "Sequence", i,
				tostring(tvb(o, 8):uint64()),
				tostring(tvb(o + 8, 8):uint64())))
			rt:add(f.range_first, tvb(o, 8))
			rt:add(f.range_last, tvb(o + 8, 8))
			if u64_lt(lh, llo, fh, flo) then
				fail(rt, "range", "first > last")
			elseif chunks and lh ~= 0 then
				fail(rt, "range", "chunk id above 2^32-1")
			end
		end
		info = info .. string.format(" %d %s range(s)", count,
			chunks and "chunk" or "seq")
	elseif ty == ROUND then
		if count ~= 0 then
			fail(it_count, "count", "ROUND carries no count")
		end
		if body ~= ROUND_SIZE then
			fail(t, "length", string.format(
				"ROUND body is %d bytes, not %d", body, ROUND_SIZE))
		end
		if body >= ROUND_SIZE then
			local o = HDR_SIZE
			local rt = t:add(p, tvb(o, ROUND_SIZE), "Round")
			local sh, sl = halves(tvb, o)
			local dh, dl = halves(tvb, o + 8)
			local ph, pl = halves(tvb, o + 16)
			local ch, cl = halves(tvb, o + 24)
			rt:add(f.r_start, tvb(o, 8))
			local dit = rt:add(f.r_deadline, tvb(o + 8, 8))
			local pit = rt:add(f.r_period, tvb(o + 16, 8))
			local cit = rt:add(f.r_clique, tvb(o + 24, 8))
			local cids = list_islands(cit, f.r_clique_island, tvb, o + 24,
				ch, cl)
			cit:append_text(" (islands: " .. (#cids > 0 and
				table.concat(cids, ",") or "none") .. ")")
			rt:add(f.r_n_chunks, tvb(o + 32, 4))
			rt:add(f.r_chunk_elems, tvb(o + 36, 4))
			if outside(bm_hi, bm_lo, n_islands) or
			   outside(ch, cl, n_islands) or
			   sender >= 64 or not has_bit(ch, cl, sender) or
			   bit.band(bm_hi, bit.bnot(ch)) ~= 0 or
			   bit.band(bm_lo, bit.bnot(cl)) ~= 0 then
				fail(cit, "bitmap",
					"clique must hold the sender and the expected set")
			end
			if u64_lt(dh, dl, sh, sl) then
				fail(dit, "round_body", "deadline before start")
			elseif ph == 0 and pl == 0 then
				fail(pit, "round_body", "period is zero")
			end
			info = info .. string.format(" clique=0x%08x%08x", ch, cl)
		end
	end
	local tag
	if tlen > 0 and v2 and trailer_ok then
		local tt, rcv = v2_trailer(tvb, t, tlen)
		if verdict == nil then
			tag = check_tags(tvb, tt, tlen, rcv)
		end
	elseif tlen > 0 then
		t:add(f.trailer, tvb(len - tlen, tlen))
	end
	t:add(f.verdict, verdict or "ok"):set_generated()
	if v2 then
		info = info .. " epoch=" .. reserved
	end
	if tag then
		info = info .. " tag=" .. tag
	end
	if verdict then
		info = info .. " [malformed: " .. verdict .. "]"
	end
	pinfo.cols.info = info
	t:append_text(", " .. info)
	return len
end

local registered_port
local function register()
	local udp = DissectorTable.get("udp.port")
	if registered_port ~= nil then
		udp:remove(registered_port, p)
	end
	registered_port = p.prefs.udp_port
	udp:add(registered_port, p)
end

function p.prefs_changed()
	if registered_port ~= p.prefs.udp_port then
		register()
	end
end

register()
