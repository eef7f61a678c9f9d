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

local bit = bit32 or bit

local HDR_SIZE = 40
local RANGE_SIZE = 16
local ROUND_SIZE = 40
local MAGIC = 0x4953
local VERSION = 1

local DATA, AGG, NACK, GONE, ROUND = 1, 2, 3, 4, 5
local F_PARTIAL, F_RESENT, F_LAST, F_CHUNKS, F_AUTH = 0x1, 0x2, 0x4, 0x8, 0x10

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
	[NACK] = F_CHUNKS + F_AUTH,
	[GONE] = F_CHUNKS + F_AUTH,
	[ROUND] = F_AUTH,
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
	f_unknown = ProtoField.uint16("isthmus.flags.unknown", "Unknown flags",
		base.HEX, nil, 0x0fe0),
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
el[#el + 1] = e.partial
el[#el + 1] = e.resent
p.experts = el

p.prefs.udp_port = Pref.uint("UDP port", 9471,
	"UDP port of the isthmus protocol (ISTH_WIRE_PORT)")
p.prefs.islands = Pref.uint("Islands", 64,
	"Islands in the job (1..64): sender and bitmaps must name fewer")
p.prefs.elems_shown = Pref.uint("Elements shown", 8,
	"DATA/AGG elements decoded per packet (the rest is shown as bytes)")

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
	if version ~= VERSION then
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
	it = t:add(f.reserved, tvb(21, 1))
	if reserved ~= 0 then
		fail(it, "reserved", "reserved byte must be zero")
	end
	if (tlen ~= 0) ~= (bit.band(flags, F_AUTH) ~= 0) or
	   tlen > len - HDR_SIZE then
		fail(it_tlen, "trailer", string.format(
			"trailer of %d bytes with auth flag %s, %d bytes after the header",
			tlen, bit.band(flags, F_AUTH) ~= 0 and "set" or "clear",
			len - HDR_SIZE))
		if tlen > len - HDR_SIZE then
			tlen = 0
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
	if tlen > 0 then
		t:add(f.trailer, tvb(len - tlen, tlen))
	end
	t:add(f.verdict, verdict or "ok"):set_generated()
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
