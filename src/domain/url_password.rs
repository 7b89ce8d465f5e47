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
