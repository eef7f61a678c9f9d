-- SPDX-License-Identifier: BSD-3-Clause
--
-- The dissector's pure-Lua primitives (scripts/isthmus.lua) against
-- their standards' own published values. Loaded after the dissector:
--   tshark -X lua_script:scripts/isthmus.lua \
--          -X lua_script:tests/wireshark/crypto_selftest.lua -r any.pcap
-- Prints "crypto self-test: N values ok"; a mismatch raises a Lua error,
-- which tshark prints on stderr (tshark_test.sh fails on any stderr).
local c = _G.isthmus_crypto
assert(c ~= nil, "load scripts/isthmus.lua first")
local n = 0
local function check(what, got, want)
	got = c.tohex(got)
	if got ~= want then
		error(string.format("crypto self-test: %s: got %s, want %s", what,
			got, want))
	end
	n = n + 1
end
local h = c.fromhex

-- FIPS 180-2, appendix B.1 and B.2 (SHA-256 of "abc" and of 448 bits).
check("SHA-256 B.1", c.sha256("abc"),
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
check("SHA-256 B.2",
	c.sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
	"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
-- RFC 4231 test case 2 (HMAC-SHA-256, key "Jefe").
check("HMAC RFC 4231 case 2",
	c.hmac_sha256("Jefe", "what do ya want for nothing?"),
	"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
-- RFC 5869 appendix A.1 (HKDF-SHA256, test case 1).
check("HKDF RFC 5869 A.1",
	c.hkdf_sha256(string.rep("\11", 22), h("000102030405060708090a0b0c"),
		h("f0f1f2f3f4f5f6f7f8f9"), 42),
	"3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db0" ..
	"2d56ecc4c5bf34007208d5b887185865")
-- FIPS 197 appendix C.3 (AES-256).
check("AES-256 FIPS 197 C.3", c.aes256_block(c.aes256_expand(
	h("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")),
	h("00112233445566778899aabbccddeeff")),
	"8ea2b7ca516745bfeafc49904b496089")
-- NIST CAVP gcmEncryptExtIV256.rsp, [Keylen = 256] [IVlen = 96]
-- [PTlen = 0] [Taglen = 128], AADlen 0 and 128, Count 0 and 1 (the values
-- tests/auth/auth_test.c checks lib/auth against).
local gcm = {
	{ "b52c505a37d78eda5dd34f20c22540ea1b58963cf8e5bf8ffa85f9f2492505b4",
		"516c33929df5a3284ff463d7", "", "bdc1ac884d332457a1d2664f168c76f0" },
	{ "5fe0861cdc2690ce69b3658c7f26f8458eec1c9243c5ba0845305d897e96ca0f",
		"770ac1a5a3d476d5d96944a1", "", "196d691e1047093ca4b3d2ef4baba216" },
	{ "78dc4e0aaf52d935c3c01eea57428f00ca1fd475f5da86a49c8dd73d68c8e223",
		"d79cf22d504cc793c3fb6c8a", "b96baa8c1c75a671bfb2d08d06be5f36",
		"3e5d486aa2e30b22e040b85723a06e76" },
	{ "4457ff33683cca6ca493878bdc00373893a9763412eef8cddb54f91318e0da88",
		"699d1f29d7b8c55300bb1fd2", "6749daeea367d0e9809e2dc2f309e6e3",
		"d60c74d2517fde4a74e0cd4709ed43a9" },
}
for i, v in ipairs(gcm) do
	check("GMAC CAVP " .. i, c.gmac(c.gmac_key(h(v[1])), h(v[2]), h(v[3])),
		v[4])
end
print(string.format("crypto self-test: %d values ok", n))
