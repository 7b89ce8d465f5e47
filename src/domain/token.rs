//! The secrets the service hands out: API tokens (`pxd_`) and invitation
//! secrets (`pxi_`, docs/teams.md): how they are made, checked, digested
//! and redacted (`docs/decisions.md` section 4).
//!
//! Format: a prefix (`pxd_`, `pxi_`), 32 random base62 characters (190
//! bits from the operating system's CSPRNG via `rand`'s thread generator),
//! then 6 base62 characters of CRC-32 over everything before them. The
//! prefix lets secret scanners recognise a leaked secret (and says which
//! kind it is); the checksum lets the service refuse a mistyped one
//! without a store look-up. Only the SHA-256 digest is stored.

use std::borrow::Cow;

use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};

pub const TOKEN_PREFIX: &str = "pxd_";
/// An invitation's secret (docs/teams.md, "Invitations").
pub const INVITATION_PREFIX: &str = "pxi_";
/// Every prefix [`redact`] and [`may_hold_a_token`] look for, with what
/// replaces a secret of it.
const PREFIXES: [(&str, &str); 2] = [
    (TOKEN_PREFIX, REDACTED),
    (INVITATION_PREFIX, REDACTED_INVITATION),
];
const PREFIX_LEN: usize = 4;
const RANDOM_LEN: usize = 32;
const CHECKSUM_LEN: usize = 6;
/// The length of a secret of any kind (every prefix is 4 characters).
pub const TOKEN_LEN: usize = PREFIX_LEN + RANDOM_LEN + CHECKSUM_LEN;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// SHA-256 of the whole token text: the only form in which a token is stored.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenDigest(pub [u8; 32]);

impl std::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenDigest(..)")
    }
}

/// Makes a new API token. Shown once to its owner, never stored.
pub fn generate() -> String {
    generate_with(TOKEN_PREFIX)
}

/// Makes a new secret with `prefix` (one of [`TOKEN_PREFIX`],
/// [`INVITATION_PREFIX`]).
pub fn generate_with(prefix: &str) -> String {
    debug_assert_eq!(prefix.len(), PREFIX_LEN);
    let mut token = String::with_capacity(TOKEN_LEN);
    token.push_str(prefix);
    Alphanumeric.append_string(&mut rand::rng(), &mut token, RANDOM_LEN);
    let checksum = checksum(&token);
    token.push_str(std::str::from_utf8(&checksum).expect("base62 is ASCII"));
    token
}

/// True when `candidate` has the API token's shape and a matching checksum.
pub fn is_well_formed(candidate: &str) -> bool {
    is_well_formed_with(TOKEN_PREFIX, candidate)
}

/// True when `candidate` is a secret with `prefix`, of the right shape,
/// with a matching checksum.
pub fn is_well_formed_with(prefix: &str, candidate: &str) -> bool {
    let bytes = candidate.as_bytes();
    if prefix.len() != PREFIX_LEN || bytes.len() != TOKEN_LEN || !candidate.starts_with(prefix) {
        return false;
    }
    let (body, given) = bytes.split_at(TOKEN_LEN - CHECKSUM_LEN);
    body[PREFIX_LEN..].iter().all(u8::is_ascii_alphanumeric)
        && checksum(std::str::from_utf8(body).unwrap_or_default()) == given
}

pub fn digest(token: &str) -> TokenDigest {
    TokenDigest(Sha256::digest(token.as_bytes()).into())
}

/// What listings show in `token`: the prefix and the last four characters.
pub fn hint(token: &str) -> String {
    let tail = token
        .get(token.len().saturating_sub(4)..)
        .unwrap_or_default();
    format!("{TOKEN_PREFIX}****{tail}")
}

/// What [`redact`] puts where a token was.
pub const REDACTED: &str = "pxd_…(redacted)";
/// What [`redact`] puts where an invitation's secret was.
pub const REDACTED_INVITATION: &str = "pxi_…(redacted)";

/// Whether `text` holds a secret's prefix (`pxd_`, `pxi_`), as [`redact`]
/// finds it (any case, `_` percent-encoded or not): the request values
/// that may be kept or repeated (`X-Request-Id`, `Idempotency-Key`) are
/// refused on it, the checksum unchecked, since a secret with a typo (or
/// shouted, `PXD_...`) is still almost all of it.
pub fn may_hold_a_token(text: &[u8]) -> bool {
    prefix_at(text, 0).is_some()
}

/// `text` with each run of a prefix (`pxd_`, `pxi_`) and the base62
/// characters after it (a secret, whole, cut short or mistyped) replaced
/// by [`REDACTED`] (or [`REDACTED_INVITATION`]). The prefix in any case
/// (`PXD_`) and with its `_` percent-encoded (`pxd%5F`, as a URL's query
/// carries it) counts too.
pub fn redact(text: &str) -> Cow<'_, str> {
    let Some(first) = prefix_at(text.as_bytes(), 0) else {
        return Cow::Borrowed(text);
    };
    let bytes = text.as_bytes();
    let mut redacted = String::with_capacity(text.len());
    let (mut copied, mut next) = (0, Some(first));
    while let Some((at, prefix_len, replacement)) = next {
        let start = at + prefix_len;
        let secret = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        // The prefix and what it is made of are ASCII: `at` and `start`
        // are character boundaries.
        redacted.push_str(&text[copied..at]);
        redacted.push_str(if secret == 0 {
            &text[at..start]
        } else {
            replacement
        });
        copied = start + secret;
        next = prefix_at(bytes, copied);
    }
    redacted.push_str(&text[copied..]);
    Cow::Owned(redacted)
}

/// The first secret's prefix at or after `from`, in any case, its `_`
/// plain or percent-encoded: where it starts, how long it is, and what
/// replaces its secret.
fn prefix_at(text: &[u8], from: usize) -> Option<(usize, usize, &'static str)> {
    (from..text.len()).find_map(|at| {
        let rest = &text[at..];
        PREFIXES.iter().find_map(|(prefix, replacement)| {
            let stem = &prefix.as_bytes()[..prefix.len() - 1];
            if rest.len() < stem.len() + 1 || !rest[..stem.len()].eq_ignore_ascii_case(stem) {
                return None;
            }
            let after = &rest[stem.len()..];
            if after[0] == b'_' {
                Some((at, stem.len() + 1, *replacement))
            } else if after.len() >= 3 && after[..3].eq_ignore_ascii_case(b"%5f") {
                Some((at, stem.len() + 3, *replacement))
            } else {
                None
            }
        })
    })
}

fn checksum(body: &str) -> [u8; CHECKSUM_LEN] {
    let mut value = crc32fast::hash(body.as_bytes());
    let mut digits = [b'0'; CHECKSUM_LEN];
    for digit in digits.iter_mut().rev() {
        *digit = BASE62[(value % 62) as usize];
        value /= 62;
    }
    digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_well_formed_and_distinct() {
        let a = generate();
        let b = generate();
        assert_ne!(a, b);
        for token in [&a, &b] {
            assert_eq!(token.len(), TOKEN_LEN);
            assert!(token.starts_with(TOKEN_PREFIX));
            assert!(is_well_formed(token), "{token}");
        }
    }

    #[test]
    fn any_single_typo_is_caught_by_the_checksum() {
        let token = generate();
        for position in TOKEN_PREFIX.len()..TOKEN_LEN {
            let mut typo = token.clone().into_bytes();
            typo[position] = if typo[position] == b'a' { b'b' } else { b'a' };
            let typo = String::from_utf8(typo).unwrap();
            assert!(!is_well_formed(&typo), "typo at {position} accepted");
        }
    }

    #[test]
    fn wrong_shapes_are_refused() {
        let token = generate();
        assert!(!is_well_formed(&token[..TOKEN_LEN - 1]));
        assert!(!is_well_formed(&format!("{token}x")));
        assert!(!is_well_formed(&token.replacen(TOKEN_PREFIX, "abc_", 1)));
        assert!(!is_well_formed(""));
        assert!(!is_well_formed(&"é".repeat(TOKEN_LEN / 2)));
    }

    #[test]
    fn hint_shows_prefix_and_last_four_only() {
        let token = generate();
        let hint = hint(&token);
        assert_eq!(hint, format!("pxd_****{}", &token[TOKEN_LEN - 4..]));
        assert!(!hint.contains(&token[TOKEN_PREFIX.len()..TOKEN_LEN - 4]));
    }

    #[test]
    fn redaction_replaces_every_run_after_the_prefix() {
        let token = generate();
        let text = format!("{token} is not a member; x.{}[0]: pxd_ pxd_-", &token[..20]);
        assert_eq!(
            redact(&text),
            format!("{REDACTED} is not a member; x.{REDACTED}[0]: pxd_ pxd_-")
        );
        assert!(matches!(redact("no token here"), Cow::Borrowed(_)));
        assert_eq!(redact(REDACTED), REDACTED);
        assert!(may_hold_a_token(token.as_bytes()) && !may_hold_a_token(b"pxd-1"));
    }

    #[test]
    fn redaction_finds_the_prefix_in_any_case_and_percent_encoded() {
        let secret = &generate()[TOKEN_PREFIX.len()..];
        let text = format!("PXD_{secret} ?t=pxd%5F{secret}&u=Pxd%5f{secret} é pxd%5F pXd_");
        assert_eq!(
            redact(&text),
            format!("{REDACTED} ?t={REDACTED}&u={REDACTED} é pxd%5F pXd_")
        );
        assert!(matches!(redact("pxd%5 pxd- é"), Cow::Borrowed(_)));
        // What redaction finds, the request values refuse.
        for found in [
            format!("PXD_{secret}"),
            format!("k-Pxi%5f{secret}"),
            "pXd_".into(),
        ] {
            assert!(may_hold_a_token(found.as_bytes()), "{found}");
        }
        assert!(!may_hold_a_token("pxd%5 pxd- é".as_bytes()));
    }

    #[test]
    fn invitation_secrets_have_their_own_prefix_and_are_redacted() {
        let secret = generate_with(INVITATION_PREFIX);
        assert_eq!(secret.len(), TOKEN_LEN);
        assert!(is_well_formed_with(INVITATION_PREFIX, &secret), "{secret}");
        // Not an API token, and an API token is no invitation's secret.
        assert!(!is_well_formed(&secret));
        assert!(!is_well_formed_with(INVITATION_PREFIX, &generate()));
        let mut typo = secret.clone().into_bytes();
        typo[10] = if typo[10] == b'a' { b'b' } else { b'a' };
        assert!(!is_well_formed_with(
            INVITATION_PREFIX,
            &String::from_utf8(typo).unwrap()
        ));
        let token = generate();
        let text = format!("a={secret}&b=PXI%5F{} {token}", &secret[4..]);
        assert_eq!(
            redact(&text),
            format!("a={REDACTED_INVITATION}&b={REDACTED_INVITATION} {REDACTED}")
        );
        assert!(may_hold_a_token(secret.as_bytes()) && !may_hold_a_token(b"pxi-1"));
    }

    #[test]
    fn digest_is_sha256_of_the_text() {
        // SHA-256("abc"), FIPS 180-2 test vector.
        let expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let hex: String = digest("abc").0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, expected);
    }

    /// Fuzz-style, bounded by `PROPTEST_CASES` (proptest's default, 256).
    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// Strings near the token's shape as well as any text.
        fn candidate() -> impl Strategy<Value = String> {
            prop_oneof![
                any::<String>(),
                "pxd_[A-Za-z0-9]{30,40}",
                "[a-z]{3}_[A-Za-z0-9]{38}",
                "pxd_.{38}",
            ]
        }

        proptest! {
            /// Never a panic, and only the exact shape with its own
            /// checksum passes.
            #[test]
            fn only_the_exact_shape_with_its_checksum_passes(text in candidate()) {
                let shaped = text.len() == TOKEN_LEN
                    && text.starts_with(TOKEN_PREFIX)
                    && text[TOKEN_PREFIX.len()..].bytes().all(|b| b.is_ascii_alphanumeric());
                let checked = shaped
                    && checksum(&text[..TOKEN_LEN - CHECKSUM_LEN])[..] == text.as_bytes()[TOKEN_LEN - CHECKSUM_LEN..];
                prop_assert_eq!(is_well_formed(&text), checked);
            }

            /// Any random part has exactly one checksum.
            #[test]
            fn a_random_part_passes_with_its_checksum_only(
                random in "[A-Za-z0-9]{32}",
                other in "[A-Za-z0-9]{6}",
            ) {
                let body = format!("{TOKEN_PREFIX}{random}");
                let own = String::from_utf8(checksum(&body).to_vec()).unwrap();
                let genuine = format!("{body}{own}");
                let guessed = format!("{body}{other}");
                prop_assert!(is_well_formed(&genuine));
                prop_assert_eq!(is_well_formed(&guessed), other == own);
            }

            /// Replacing, inserting or removing one character anywhere in
            /// a real token is always refused.
            #[test]
            fn one_character_changed_is_always_refused(
                position in 0..TOKEN_LEN,
                replacement in any::<char>(),
                edit in 0..3u8,
            ) {
                let token = generate();
                let mut chars: Vec<char> = token.chars().collect();
                match edit {
                    0 => {
                        prop_assume!(chars[position] != replacement);
                        chars[position] = replacement;
                    }
                    1 => chars.insert(position, replacement),
                    _ => {
                        chars.remove(position);
                    }
                }
                let changed: String = chars.into_iter().collect();
                prop_assert!(!is_well_formed(&changed), "{changed:?} passes");
            }
        }
    }
}
