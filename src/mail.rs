//! Invitations' options and their delivery by email (docs/teams.md,
//! "Invitations"): `--invitation-ttl`, the hourly bound, `--public-url`,
//! and `--smtp-url`/`--smtp-from`, over `lettre` (async on tokio, TLS by
//! rustls with ring). A message is sent after the invitation's
//! transaction commits, within [`SEND_TIMEOUT`]; when it is not sent the
//! answer carries the link, and the log says so without the address or
//! the secret.

use std::time::Duration;

use anyhow::Context as _;
use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::domain::directory::Role;
use crate::domain::teams;
use crate::domain::time::Timestamp;

/// The longest one message's delivery may take (connecting, TLS, every
/// command): the admin's answer waits for it.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything `serve` is told about invitations.
#[derive(Clone, Debug)]
pub struct InvitationOptions {
    /// How long an invitation is valid (`--invitation-ttl`).
    pub ttl: Duration,
    /// Invitations one organization may create in an hour
    /// (`--invitations-per-organization-per-hour`).
    pub per_organization_per_hour: u32,
    /// The service's address as people reach it (`--public-url`): the
    /// base of the acceptance link. `None`: the request's own origin.
    pub public_url: Option<String>,
    /// Where invitations are sent from, when they are sent.
    pub smtp: Option<SmtpOptions>,
}

impl Default for InvitationOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(teams::DEFAULT_TTL_SECONDS),
            per_organization_per_hour: teams::DEFAULT_PER_ORGANIZATION_PER_HOUR,
            public_url: None,
            smtp: None,
        }
    }
}

/// `--smtp-url` (`smtp://`, `smtps://`, with credentials and
/// `?tls=required` as lettre reads them) and `--smtp-from`.
#[derive(Clone)]
pub struct SmtpOptions {
    pub url: String,
    pub from: String,
}

impl std::fmt::Debug for SmtpOptions {
    // The URL may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpOptions")
            .field("url", &crate::domain::url_password::masked(&self.url))
            .field("from", &self.from)
            .finish()
    }
}

impl SmtpOptions {
    /// Whether lettre can use them: the URL's form, the sender's address.
    pub fn check(&self) -> Result<(), String> {
        AsyncSmtpTransport::<Tokio1Executor>::from_url(&self.url)
            .map_err(|_| "--smtp-url: write smtp://HOST[:PORT] or smtps://HOST[:PORT], with USER:PASSWORD@ before the host if the server wants them".to_owned())?;
        self.from
            .parse::<Mailbox>()
            .map_err(|_| "--smtp-from: write an address such as proxydeck@example.com or \"proxydeck <proxydeck@example.com>\"".to_owned())?;
        Ok(())
    }
}

/// What an invitation's email says.
#[derive(Clone, Debug)]
pub struct InvitationEmail<'a> {
    pub inviter: &'a str,
    pub organization: &'a str,
    pub role: Role,
    pub link: &'a str,
    pub expires_at: Timestamp,
}

impl InvitationEmail<'_> {
    pub fn subject(&self) -> String {
        format!(
            "{} invited you to {} on proxydeck",
            self.inviter_or_someone(),
            self.organization
        )
    }

    pub fn text(&self) -> String {
        format!(
            "{inviter} invited you to join the organization {organization} on proxydeck, \
             as {role}.\n\n\
             To accept, open this link:\n\n{link}\n\n\
             The invitation can be used once and expires at {expires} (UTC). \
             If you did not expect it, ignore this email: nothing happens until \
             the link is used.\n",
            inviter = self.inviter_or_someone(),
            organization = self.organization,
            role = self.role.as_str(),
            link = self.link,
            expires = self.expires_at,
        )
    }

    fn inviter_or_someone(&self) -> &str {
        if self.inviter.trim().is_empty() {
            "An administrator"
        } else {
            self.inviter
        }
    }
}

/// Why a message was not sent, as the log may say it: never the server's
/// own words, which may repeat the address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotSent {
    /// The address is not one a message can be built for.
    Address,
    /// No answer within [`SEND_TIMEOUT`].
    Timeout,
    /// The server refused the message for good (5xx).
    Refused,
    /// The server refused it for now (4xx).
    Deferred,
    /// The server could not be reached, or TLS failed.
    Unreachable,
}

impl NotSent {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Address => "address",
            Self::Timeout => "timeout",
            Self::Refused => "refused",
            Self::Deferred => "deferred",
            Self::Unreachable => "unreachable",
        }
    }
}

/// The SMTP transport, made once when the service starts.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer").finish_non_exhaustive()
    }
}

impl Mailer {
    pub fn new(options: &SmtpOptions) -> anyhow::Result<Self> {
        options.check().map_err(anyhow::Error::msg)?;
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(&options.url)
            .context("--smtp-url")?
            .timeout(Some(SEND_TIMEOUT))
            .build();
        let from = options.from.parse().context("--smtp-from")?;
        Ok(Self { transport, from })
    }

    /// Sends the invitation to `to`, within [`SEND_TIMEOUT`].
    pub async fn send(&self, to: &str, email: &InvitationEmail<'_>) -> Result<(), NotSent> {
        let to: Mailbox = to.parse().map_err(|_| NotSent::Address)?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(email.subject())
            .header(ContentType::TEXT_PLAIN)
            .body(email.text())
            .map_err(|_| NotSent::Address)?;
        match tokio::time::timeout(SEND_TIMEOUT, self.transport.send(message)).await {
            Err(_) => Err(NotSent::Timeout),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) if error.is_timeout() => Err(NotSent::Timeout),
            Ok(Err(error)) if error.is_permanent() => Err(NotSent::Refused),
            Ok(Err(error)) if error.is_transient() => Err(NotSent::Deferred),
            Ok(Err(_)) => Err(NotSent::Unreachable),
        }
    }
}

/// The invitations' options with their mailer, as handlers reach them.
#[derive(Debug)]
pub struct Invitations {
    pub options: InvitationOptions,
    pub mailer: Option<Mailer>,
}

impl Invitations {
    pub fn new(options: InvitationOptions) -> anyhow::Result<Self> {
        let mailer = options.smtp.as_ref().map(Mailer::new).transpose()?;
        Ok(Self { options, mailer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_email_names_the_inviter_organization_role_link_and_expiry() {
        let at = Timestamp::from_millis(1_700_000_000_000).unwrap();
        let email = InvitationEmail {
            inviter: "Ann",
            organization: "Acme",
            role: Role::Editor,
            link: "https://deck.example.com/console/#/accept?invitation=pxi_x",
            expires_at: at,
        };
        let text = email.text();
        for part in ["Ann", "Acme", "editor", email.link, &at.to_string()] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert_eq!(email.subject(), "Ann invited you to Acme on proxydeck");
    }

    #[test]
    fn smtp_options_are_checked() {
        let good = SmtpOptions {
            url: "smtp://127.0.0.1:2525".into(),
            from: "proxydeck <deck@example.com>".into(),
        };
        assert!(good.check().is_ok());
        let bad_url = SmtpOptions {
            url: "http://x".into(),
            ..good.clone()
        };
        assert!(bad_url.check().is_err());
        let bad_from = SmtpOptions {
            from: "not an address".into(),
            ..good
        };
        assert!(bad_from.check().is_err());
    }
}
