//! Where an export goes (a file, stdout, a folder that is not there), its
//! summaries and failures, its files' permissions, and a deep error in a
//! big import that writes nothing.

use super::*;

#[test]
fn export_destinations_summaries_and_failures() {
    let sandbox = Sandbox::new();
    sandbox.import(&[
        org(1),
        org(2),
        user("u1", &[1, 2]),
        project("p1", 1, 0),
        project("p2", 2, 1),
        settings("p1", 1, true),
    ]);
    let counts = json!({"organizations": 2, "users": 1, "projects": 2, "proxy_settings": 1});

    // To a FILE with --json: the counts, one JSON document on stdout.
    let file = sandbox.path().join("out.ndjson");
    assert_eq!(export_to(&sandbox, &file), counts);
    let exported = read(&file);
    assert_eq!(parse_export(&exported).len(), 6);

    // To a FILE without --json: human text on stdout, nothing on stderr.
    let out = sandbox.run(&["admin", "export", &file.display().to_string()]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    assert!(out.stdout.contains("2 projects"), "{out:#?}");
    assert_eq!(read(&file), exported);

    // A relative FILE is in the current folder.
    let out = sandbox.run(&["admin", "export", "relative.ndjson", "--quiet"]);
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(read(&sandbox.path().join("relative.ndjson")), exported);

    // To stdout (no FILE, or -): only NDJSON there; the summary on stderr,
    // as JSON with --json; none with --quiet.
    for args in [
        vec!["admin", "export"],
        vec!["admin", "export", "-"],
        vec!["admin", "export", "--json"],
        vec!["admin", "export", "-", "--json"],
        vec!["admin", "export", "--quiet"],
        vec!["admin", "export", "-q", "--json"],
    ] {
        let out = sandbox.run(&args);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        assert_eq!(out.stdout, exported, "{args:?}");
        let quiet = args.contains(&"--quiet") || args.contains(&"-q");
        if quiet {
            assert!(out.stderr.is_empty(), "{args:?}: {out:#?}");
        } else if args.contains(&"--json") {
            assert_eq!(one_json_document(&out.stderr), counts, "{args:?}");
        } else {
            assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out:#?}");
            assert!(out.stderr.contains("2 projects"), "{args:?}: {out:#?}");
        }
    }
    // --quiet to a FILE still prints the result.
    let out = sandbox.run(&[
        "admin",
        "export",
        &file.display().to_string(),
        "-q",
        "--json",
    ]);
    assert_eq!(out.json(), counts);

    // A FILE in a folder that does not exist: one line, nothing created.
    let before = listing(sandbox.path());
    let missing = sandbox.path().join("no-such-folder").join("out.ndjson");
    let line = sandbox
        .run(&["admin", "export", &missing.display().to_string(), "--json"])
        .error(&["no-such-folder"]);
    assert!(!line.contains('\r'), "{line}");
    assert!(!sandbox.path().join("no-such-folder").exists());
    assert_eq!(listing(sandbox.path()), before);

    // A pre-existing FILE is replaced on success...
    let old = sandbox.path().join("old.ndjson");
    std::fs::write(&old, "old content\n".repeat(10_000)).unwrap();
    assert_eq!(export_to(&sandbox, &old), counts);
    assert_eq!(read(&old), exported);

    // ...and only then: a FILE that is a folder cannot be replaced; the
    // folder stays as it was and no temporary file is left behind.
    let folder = sandbox.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("inside.txt"), "kept").unwrap();
    let before = listing(sandbox.path());
    sandbox
        .run(&["admin", "export", &folder.display().to_string()])
        .error(&[]);
    assert_eq!(listing(sandbox.path()), before);
    assert_eq!(listing(&folder), ["inside.txt"]);

    // An export that fails half-way (a stored revision no longer reads)
    // leaves the existing FILE untouched and nothing beside it.
    std::fs::write(&old, "old content\n").unwrap();
    let connection = rusqlite::Connection::open(sandbox.db_path()).unwrap();
    connection
        .execute(
            "UPDATE proxy_settings SET body = '{not json' WHERE project_id = 'p1'",
            [],
        )
        .unwrap();
    drop(connection);
    let before = listing(sandbox.path());
    sandbox
        .run(&["admin", "export", &old.display().to_string(), "--json"])
        .error(&[]);
    assert_eq!(read(&old), "old content\n");
    assert_eq!(listing(sandbox.path()), before);
}

#[test]
fn exporting_an_empty_store_writes_nothing_but_succeeds() {
    let sandbox = Sandbox::new();
    sandbox.json(&["migrate"]);
    let file = sandbox.path().join("empty.ndjson");
    assert_eq!(
        export_to(&sandbox, &file),
        json!({"organizations": 0, "users": 0, "projects": 0, "proxy_settings": 0})
    );
    assert_eq!(read(&file), "");
    let out = sandbox.run(&["admin", "export", "--quiet"]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:#?}");
}

#[test]
fn an_error_deep_in_a_big_import_writes_nothing_and_names_its_line() {
    let sandbox = Sandbox::new();
    sandbox.import(&[
        org(1),
        user("u1", &[1]),
        project("keep", 1, 0),
        settings("keep", 1, true),
    ]);
    sandbox.token("u1", "kept");
    let before = dump(&sandbox.db_path());

    let good = many_projects(9_999);
    assert_eq!(good.len(), 10_000);

    // A value rule broken on line 5000 (found while reading).
    let mut lines = good.clone();
    lines[4_999] = json!({"object": "project", "id": "bad", "organization_id": org_id(1),
                          "log_severity": "LOUD"})
    .to_string();
    let file = sandbox.ndjson("bad-5000.ndjson", &lines);
    let line = sandbox
        .run(&["admin", "import", &file, "--json"])
        .error(&["line 5000", "log_severity"]);
    assert!(!line.contains("line 1:"), "{line}");
    assert_eq!(
        dump(&sandbox.db_path()),
        before,
        "line 5000: the store changed"
    );

    // The same through standard input.
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    sandbox
        .run_with_stdin(&["admin", "import", "-"], &text)
        .error(&["line 5000", "log_severity"]);
    assert_eq!(dump(&sandbox.db_path()), before, "stdin: the store changed");

    // A reference to nothing on line 7000 (found while writing, after 6998
    // projects went into the transaction).
    let mut lines = good.clone();
    lines[6_999] = settings("nowhere", 1, true).to_string();
    let file = sandbox.ndjson("bad-7000.ndjson", &lines);
    sandbox
        .run(&["admin", "import", &file])
        .error(&["line 7000", "project_id"]);
    assert_eq!(
        dump(&sandbox.db_path()),
        before,
        "line 7000: the store changed"
    );

    // The last line of the file.
    let mut lines = good;
    lines[9_999] = "{\"object\": \"project\"".to_owned();
    let file = sandbox.ndjson("bad-10000.ndjson", &lines);
    sandbox
        .run(&["admin", "import", &file])
        .error(&["line 10000"]);
    assert_eq!(
        dump(&sandbox.db_path()),
        before,
        "line 10000: the store changed"
    );
}

/// The fixtures' +02:00 times name the instants they mean to.
#[test]
fn plus_two_writes_the_same_instant() {
    let shifted = plus_two("2026-01-01T23:30:00.250Z");
    assert_eq!(shifted, "2026-01-02T01:30:00.250+02:00");
    assert_eq!(wire(&shifted), "2026-01-01T23:30:00.250Z");
}

/// An export file gets the mode any new file gets there (not a temporary
/// file's private 0600), and replacing an export keeps the old file's mode.
#[test]
fn export_files_get_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt as _;
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    // What this process's umask gives a new file.
    let probe = sandbox.path().join("probe");
    std::fs::File::create(&probe).unwrap();

    let fresh = sandbox.path().join("fresh.ndjson");
    export_to(&sandbox, &fresh);
    assert_eq!(mode(&fresh), mode(&probe));

    let kept = sandbox.path().join("kept.ndjson");
    std::fs::write(&kept, "old\n").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
    export_to(&sandbox, &kept);
    assert_eq!(mode(&kept), 0o640);
    assert_ne!(read(&kept), "old\n");
}
