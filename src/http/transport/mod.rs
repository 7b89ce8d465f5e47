//! How requests reach the router and answers leave it: the server loop and
//! its connections, the body framing it watches, the limits checked before
//! routing, and `Connection: close` after a body left unread.

pub mod body_framing;
pub mod client_stream;
pub mod limits;
pub mod server;
pub mod unread_body;
