//! Passwords in the URLs of the services proxydeck connects to (the
//! database's `postgres://user:password@host/db`, the rate limit's
//! `redis://:password@host`), hidden wherever such a URL is shown.

/// What a hidden password is shown as.
pub const MASK: &str = "****";

/// `url` with every password in it replaced by [`MASK`]: the one in the
/// user information (`scheme://user:password@host`) and the value of each
/// `password=` or `pass=` query parameter (PostgreSQL and Redis accept a
/// password there too). Anything that is not a URL is left as it is.
///
/// It leans towards hiding too much: the user information is taken to end
/// at the last `@`, so that a password holding `/`, `?` or `@` unescaped is
/// hidden whole.
pub fn masked(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let (scheme, rest) = url.split_at(scheme_end + "://".len());
    let rest = match rest.rfind('@') {
        Some(at) => {
            let (user_info, host_on) = rest.split_at(at);
            match user_info.split_once(':') {
                Some((user, _password)) => format!("{user}:{MASK}{host_on}"),
                None => rest.to_owned(),
            }
        }
        None => rest.to_owned(),
    };
    let rest = match rest.split_once('?') {
        Some((path, query)) => format!("{path}?{}", masked_query(query)),
        None => rest,
    };
    format!("{scheme}{rest}")
}

/// Whether `url` holds a password anywhere [`masked`] would hide one.
pub fn has_password(url: &str) -> bool {
    masked(url) != url
}

/// `url` with `password` put in, percent-encoded: for a password kept in
/// a file rather than in the URL. It goes in the user information
/// (`scheme://user:password@host`) when the URL names a host there;
/// otherwise (a Unix socket given as `postgres:///db?host=/run/postgresql`,
/// several hosts, `redis+unix:///path`) in the query parameter the
/// driver reads (`password=` for PostgreSQL, `pass=` for Redis over a
/// socket). The errors say why without repeating either text.
pub fn with_password(url: &str, password: &str) -> Result<String, String> {
    if has_password(url) {
        return Err("the URL holds a password already: give it in one place".into());
    }
    let encoded =
        percent_encoding::utf8_percent_encode(password, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
    // The URL's own encoding of user information leaves `%` as it is.
    let in_user_information = url::Url::parse(url).ok().and_then(|mut parsed| {
        let has_host = parsed.host_str().is_some_and(|host| !host.is_empty());
        (has_host && parsed.set_password(Some(&encoded)).is_ok()).then(|| parsed.into())
    });
    if let Some(given) = in_user_information {
        return Ok(given);
    }
    let scheme = url.split("://").next().unwrap_or_default();
    let parameter = match scheme {
        "postgres" | "postgresql" => "password",
        "redis+unix" | "unix" => "pass",
        _ => {
            return Err(
                "the URL has no host to give a password for: write it as scheme://user@host/..."
                    .into(),
            );
        }
    };
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}{parameter}={encoded}"))
}

/// The password kept in the file at `path`: its text, less one final line
/// end (as `echo` and editors leave). The errors never hold the text.
pub fn read_password_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let password = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if password.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    if password.contains(['\n', '\r']) {
        return Err(format!(
            "{} holds more than one line: a password file holds the password alone",
            path.display()
        ));
    }
    Ok(password.to_owned())
}

/// A query string with the values of `password` and `pass` hidden.
fn masked_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _value))
                if ["password", "pass"].contains(&key.to_ascii_lowercase().as_str()) =>
            {
                format!("{key}={MASK}")
            }
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_from_a_file_is_encoded_into_the_user_information() {
        for (url, password, expected) in [
            (
                "postgres://app@db.internal:5432/proxydeck?sslmode=require",
                "p@ss/w:rd%",
                "postgres://app:p%40ss%2Fw%3Ard%25@db.internal:5432/proxydeck?sslmode=require",
            ),
            (
                "redis://cache:6379/0",
                "hunter2",
                "redis://:hunter2@cache:6379/0",
            ),
            (
                "redis://user@cache",
                "hunter2",
                "redis://user:hunter2@cache",
            ),
        ] {
            let given = with_password(url, password).unwrap();
            assert_eq!(given, expected);
            assert!(has_password(&given));
        }
        for (url, expected) in [
            (
                "postgres:///proxydeck?host=/run/postgresql",
                "postgres:///proxydeck?host=/run/postgresql&password=p%40ss%2Fw%3Ard%25%26x%3D1",
            ),
            (
                "postgresql://app@/proxydeck?host=%2Ftmp&port=5433",
                "postgresql://app@/proxydeck?host=%2Ftmp&port=5433&password=p%40ss%2Fw%3Ard%25%26x%3D1",
            ),
            (
                "postgres://db1:5432,db2:5433/proxydeck",
                "postgres://db1:5432,db2:5433/proxydeck?password=p%40ss%2Fw%3Ard%25%26x%3D1",
            ),
            (
                "redis+unix:///run/redis.sock?db=1",
                "redis+unix:///run/redis.sock?db=1&pass=p%40ss%2Fw%3Ard%25%26x%3D1",
            ),
        ] {
            let given = with_password(url, "p@ss/w:rd%&x=1").unwrap();
            assert_eq!(given, expected);
            assert!(has_password(&given));
            assert!(!masked(&given).contains("p%40ss"), "{given}");
        }
        // The driver reads each form back to the same password and hosts.
        for url in [
            "postgres:///proxydeck?host=/run/postgresql",
            "postgres://app@/proxydeck?host=%2Ftmp&port=5433",
            "postgres://db1:5432,db2:5433/proxydeck",
            "postgres://app@db/x",
        ] {
            let parsed: tokio_postgres::Config = with_password(url, "p@ss/w:rd%&x=1")
                .unwrap()
                .parse()
                .unwrap();
            let plain: tokio_postgres::Config = url.parse().unwrap();
            assert_eq!(parsed.get_password(), Some(&b"p@ss/w:rd%&x=1"[..]), "{url}");
            assert_eq!(parsed.get_hosts(), plain.get_hosts(), "{url}");
            assert_eq!(parsed.get_user(), plain.get_user(), "{url}");
        }
        let refused = with_password("mysql:///x", "hunter2").unwrap_err();
        assert!(refused.contains("scheme://user@host/"), "{refused}");
        let parsed: tokio_postgres::Config = with_password("postgres://app@db/x", "p@ss/w:rd%")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(parsed.get_password(), Some(&b"p@ss/w:rd%"[..]));
        for url in [
            "postgres://app:other@db/x",
            "postgres://app@db/x?password=other",
        ] {
            let refused = with_password(url, "hunter2").unwrap_err();
            assert!(refused.contains("already"), "{refused}");
            assert!(!refused.contains("other") && !refused.contains("hunter2"));
        }
    }

    #[test]
    fn a_password_file_holds_one_line() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("password");
        for (text, read) in [
            ("hunter2", Ok("hunter2")),
            ("hunter2\n", Ok("hunter2")),
            ("hunter2\r\n", Ok("hunter2")),
            (" spaced pass ", Ok(" spaced pass ")),
            ("", Err("is empty")),
            ("\n", Err("is empty")),
            ("hunter2\nmore\n", Err("more than one line")),
        ] {
            std::fs::write(&path, text).unwrap();
            match (read_password_file(&path), read) {
                (Ok(found), Ok(expected)) => assert_eq!(found, expected),
                (Err(why), Err(expected)) => {
                    assert!(why.contains(expected), "{why}");
                    assert!(!why.contains("hunter2"), "{why}");
                }
                (found, expected) => panic!("{text:?}: {found:?}, expected {expected:?}"),
            }
        }
        assert!(read_password_file(&folder.path().join("missing")).is_err());
    }

    #[test]
    fn passwords_are_hidden_and_the_rest_is_kept() {
        for (url, shown) in [
            (
                "postgres://app:hunter2@db.internal:5432/proxydeck",
                "postgres://app:****@db.internal:5432/proxydeck",
            ),
            (
                "postgresql://app:p%40ss@db/proxydeck?sslmode=require",
                "postgresql://app:****@db/proxydeck?sslmode=require",
            ),
            (
                "postgres://app@db/proxydeck?password=hunter2&sslmode=disable",
                "postgres://app@db/proxydeck?password=****&sslmode=disable",
            ),
            ("postgres://app:pa/ss?w@rd@db/x", "postgres://app:****@db/x"),
            (
                "redis://:hunter2@cache:6379/0",
                "redis://:****@cache:6379/0",
            ),
            (
                "rediss://user:hunter2@cache/1",
                "rediss://user:****@cache/1",
            ),
            (
                "redis+unix:///run/redis.sock?db=1&pass=hunter2",
                "redis+unix:///run/redis.sock?db=1&pass=****",
            ),
            ("redis://cache:6379", "redis://cache:6379"),
            ("postgres://app@db/proxydeck", "postgres://app@db/proxydeck"),
            ("sqlite://proxydeck.db", "sqlite://proxydeck.db"),
            (
                "sqlite:///var/lib/proxydeck/data.db",
                "sqlite:///var/lib/proxydeck/data.db",
            ),
            (
                "postgres://db/x?password=hunter2&application_name=a@b",
                "postgres://db/x?password=****&application_name=a@b",
            ),
            ("not a url", "not a url"),
        ] {
            assert_eq!(masked(url), shown, "{url}");
            assert!(!masked(url).contains("hunter2"), "{url}");
        }
    }
}
