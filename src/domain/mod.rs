//! The domain: resources and their value rules, pagination, the token
//! format, the import format, and how passwords in URLs are hidden.
//! Nothing here knows HTTP or SQL.

pub mod access;
pub mod api_token;
pub mod change;
pub mod directory;
pub mod domains;
pub mod edge;
pub mod geo;
pub mod host_name;
pub mod ids;
pub mod import;
pub mod json_patch;
pub mod organization_set;
pub mod pagination;
pub mod project;
pub mod proxy_settings;
pub mod regexes;
pub mod rollout;
pub mod teams;
pub mod time;
pub mod token;
pub mod url_password;
mod validate;

pub use validate::FieldError;

/// Declares the one-value enum that serialises as a resource's `object`
/// member, so a resource cannot be written with the wrong kind.
macro_rules! object_tag {
    ($name:ident, $value:literal) => {
        #[derive(
            Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize,
        )]
        pub enum $name {
            #[default]
            #[serde(rename = $value)]
            Tag,
        }
    };
}
pub(crate) use object_tag;
