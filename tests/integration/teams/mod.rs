//! Teams (docs/teams.md): organizations, members, users and invitations,
//! over real HTTP on both stores.

mod invitations;
