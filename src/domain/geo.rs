//! The geographic values the service accepts, in one place: continents
//! and countries (ISO 3166-1 alpha-2), as geo-IP databases give them for
//! a request's address, and the names of the regions edges run in, as a
//! route's `continent`, `country` and `region` and a rate-limiting rule's
//! `conditions.continent` and `conditions.country` hold them. The lists
//! and why they are these: `docs/management.md`, "Checks before
//! activation".

/// The seven continent codes geo-IP databases use: Africa, Antarctica,
/// Asia, Europe, North America, Oceania, South America.
pub const CONTINENTS: [&str; 7] = ["AF", "AN", "AS", "EU", "NA", "OC", "SA"];

/// Officially assigned ISO 3166-1 alpha-2 codes (249), plus `XK`
/// (Kosovo): user-assigned, but the code geo-IP databases give it. No
/// other user-assigned code (`AA`, `QM` to `QZ`, `XA` to `XZ`, `ZZ`), no
/// exceptionally or transitionally reserved one (`UK`, `EU`, `AN`...).
pub(crate) const COUNTRY_CODES: &str = "\
ADAEAFAGAIALAMAOAQARASATAUAWAXAZBABBBDBEBFBGBHBIBJBLBMBNBOBQBRBSBTBVBWBYBZ\
CACCCDCFCGCHCICKCLCMCNCOCRCUCVCWCXCYCZDEDJDKDMDODZECEEEGEHERESETFIFJFKFMFOFR\
GAGBGDGEGFGGGHGIGLGMGNGPGQGRGSGTGUGWGYHKHMHNHRHTHUIDIEILIMINIOIQIRISITJEJMJOJP\
KEKGKHKIKMKNKPKRKWKYKZLALBLCLILKLRLSLTLULVLYMAMCMDMEMFMGMHMKMLMMMNMOMPMQMRMSMT\
MUMVMWMXMYMZNANCNENFNGNINLNONPNRNUNZOMPAPEPFPGPHPKPLPMPNPRPSPTPWPYQARERORSRURW\
SASBSCSDSESGSHSISJSKSLSMSNSOSRSSSTSVSXSYSZTCTDTFTGTHTJTKTLTMTNTOTRTTTVTWTZ\
UAUGUMUSUYUZVAVCVEVGVIVNVUWFWSXKYEYTZAZMZW";

pub const CONTINENT_RULE: &str = "must be a continent code: one of AF, AN, AS, EU, NA, OC, SA";
pub const COUNTRY_RULE: &str = "must be an upper-case ISO 3166-1 alpha-2 country code, such as FR";
pub const REGION_RULE: &str = "must be a region name: 1 to 64 characters, no control characters (the region an edge runs in, such as Fastly's US-East, EU-West or APAC)";

/// The longest region name.
pub const MAX_REGION_CHARS: usize = 64;

/// One of [`CONTINENTS`].
pub fn is_continent(value: &str) -> bool {
    CONTINENTS.contains(&value)
}

/// One of [`COUNTRY_CODES`].
pub fn is_country(value: &str) -> bool {
    value.len() == 2
        && COUNTRY_CODES
            .as_bytes()
            .chunks(2)
            .any(|code| code == value.as_bytes())
}

/// A route's `region`: the name of a region of the world the edge
/// serving the request runs in, as the public document describes it
/// ("the general regions of the world in which the Fastly POP processing
/// the current Compute instance resides": `US-East`, `EU-West`, `APAC`,
/// `Asia`...). Those lists change with the networks that keep them and a
/// self-hosted platform names its own, so any name is taken: 1 to
/// [`MAX_REGION_CHARS`] characters, no control characters.
pub fn is_region(value: &str) -> bool {
    (1..=MAX_REGION_CHARS).contains(&value.chars().count()) && !value.chars().any(char::is_control)
}

/// The country codes one by one, in the list's order.
pub fn countries() -> impl Iterator<Item = &'static str> {
    (0..COUNTRY_CODES.len())
        .step_by(2)
        .map(|i| &COUNTRY_CODES[i..i + 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::project::Continent;

    fn document() -> serde_json::Value {
        serde_json::from_str(crate::http::openapi::DOCUMENT).unwrap()
    }

    fn strings(value: Option<&serde_json::Value>) -> Vec<String> {
        value
            .and_then(|codes| codes.as_array())
            .expect("a list of codes")
            .iter()
            .map(|code| code.as_str().unwrap().to_owned())
            .collect()
    }

    /// The served document lists the same codes, so that generated
    /// clients and fuzzers know the rule: the rate-limiting conditions'
    /// and the routes' input schemas alike.
    #[test]
    fn the_document_lists_the_codes() {
        let document = document();
        let countries: Vec<String> = countries().map(str::to_owned).collect();
        let continents: Vec<String> = CONTINENTS.iter().map(|c| (*c).to_owned()).collect();
        for schema in ["RateConditionsInput", "RouteInput"] {
            let at = |member: &str| {
                document.pointer(&format!(
                    "/components/schemas/{schema}/properties/{member}/items/enum"
                ))
            };
            assert_eq!(strings(at("country")), countries, "{schema}");
            assert_eq!(strings(at("continent")), continents, "{schema}");
        }
        let region = document
            .pointer("/components/schemas/RouteInput/properties/region/items")
            .expect("RouteInput.region's items");
        assert_eq!(region["minLength"], 1);
        assert_eq!(region["maxLength"], MAX_REGION_CHARS);
    }

    /// The rate-limiting rule's `Continent` reads exactly these codes.
    #[test]
    fn continents_are_the_rate_conditions_ones() {
        for code in CONTINENTS {
            let read: Continent = serde_json::from_value(serde_json::json!(code)).unwrap();
            assert_eq!(serde_json::to_value(read).unwrap(), code);
        }
        assert!(serde_json::from_value::<Continent>(serde_json::json!("EUR")).is_err());
        assert!(is_continent("EU") && !is_continent("eu") && !is_continent("XX"));
    }

    #[test]
    fn country_list_has_the_249_iso_codes_and_xk() {
        assert_eq!(countries().count(), 250);
        for good in ["FR", "US", "XK", "ZW", "AD"] {
            assert!(is_country(good), "{good}");
        }
        for bad in ["fr", "ZZ", "UK", "EU", "QM", "AA", "USA", "", "F"] {
            assert!(!is_country(bad), "{bad}");
        }
    }

    /// Fastly's region names, ISO 3166-2 codes and a platform's own
    /// names are all region names; nothing empty, too long or holding a
    /// control character is.
    #[test]
    fn regions_are_names() {
        let longest = "r".repeat(MAX_REGION_CHARS);
        for good in [
            "US-East",
            "EU-West",
            "APAC",
            "Asia-South",
            "South-Africa",
            "FR-IDF",
            "eu-west-1",
            "Île-de-France",
            longest.as_str(),
        ] {
            assert!(is_region(good), "{good}");
        }
        let too_long = "r".repeat(MAX_REGION_CHARS + 1);
        for bad in ["", "EU\nWest", "US\u{1b}[2J", "a\u{7f}", too_long.as_str()] {
            assert!(!is_region(bad), "{bad:?}");
        }
    }

    /// The document's schema of a region name accepts what [`is_region`]
    /// accepts.
    #[test]
    fn the_region_schema_states_the_rule() {
        let document = document();
        let schema = document
            .pointer("/components/schemas/RouteInput/properties/region/items")
            .expect("RouteInput.region's items");
        let schema = jsonschema::validator_for(schema).expect("the schema compiles");
        let too_long = "r".repeat(MAX_REGION_CHARS + 1);
        for value in [
            "US-East",
            "APAC",
            "FR-IDF",
            "Île-de-France",
            "",
            "EU\nWest",
            "a\u{9f}",
            too_long.as_str(),
        ] {
            assert_eq!(
                is_region(value),
                schema.is_valid(&serde_json::json!(value)),
                "{value:?}"
            );
        }
    }
}
