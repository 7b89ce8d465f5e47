//! The geographic codes the service accepts, in one place: continents,
//! countries (ISO 3166-1 alpha-2) and regions (ISO 3166-2 subdivisions),
//! as a route's `continent`, `country` and `region` and a rate-limiting
//! rule's `conditions.continent` and `conditions.country` hold them. The
//! lists and why they are these: `docs/management.md`, "Checks before
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
pub const REGION_RULE: &str = "must be an ISO 3166-2 subdivision code: a country code, `-` and 1 to 3 upper-case letters or digits, such as FR-IDF";

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

/// An ISO 3166-2 subdivision code's shape, `CC-XXX`: a country of
/// [`COUNTRY_CODES`], `-`, then 1 to 3 upper-case ASCII letters or
/// digits (`FR-IDF`, `US-CA`, `FR-75C`, `ES-M`). The shape and the
/// country are checked, not that the country has that subdivision.
pub fn is_region(value: &str) -> bool {
    let Some((country, subdivision)) = value.split_once('-') else {
        return false;
    };
    is_country(country)
        && (1..=3).contains(&subdivision.len())
        && subdivision
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// The country codes one by one, in the list's order.
pub fn countries() -> impl Iterator<Item = &'static str> {
    (0..COUNTRY_CODES.len())
        .step_by(2)
        .map(|i| &COUNTRY_CODES[i..i + 2])
}

/// The JSON Schema `pattern` that states [`is_region`]: the served
/// document's `RouteInput.region` items carry it.
pub fn region_pattern() -> String {
    let countries: Vec<&str> = countries().collect();
    format!("^({})-[A-Z0-9]{{1,3}}$", countries.join("|"))
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
        assert_eq!(
            document
                .pointer("/components/schemas/RouteInput/properties/region/items/pattern")
                .and_then(|p| p.as_str()),
            Some(region_pattern().as_str())
        );
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

    #[test]
    fn regions_are_a_country_and_a_subdivision() {
        for good in ["FR-IDF", "US-CA", "FR-75C", "ES-M", "GB-ENG", "XK-01"] {
            assert!(is_region(good), "{good}");
        }
        for bad in [
            "IDF", "FR", "FR-", "FR-IDFX", "fr-IDF", "FR-idf", "ZZ-ABC", "FR_IDF", "FR-I-D",
            "-IDF", "FR-ÎDF", "",
        ] {
            assert!(!is_region(bad), "{bad}");
        }
    }

    /// The document's pattern accepts what [`is_region`] accepts.
    #[test]
    fn the_region_pattern_states_the_rule() {
        let pattern = jsonschema::validator_for(&serde_json::json!({"pattern": region_pattern()}))
            .expect("the pattern compiles");
        for value in [
            "FR-IDF", "US-CA", "ES-M", "XK-01", "FR-IDFX", "fr-IDF", "ZZ-ABC", "FR", "FR-", "IDF",
            "FR-I-D", "AFR-IDF", "FR-IDF\n",
        ] {
            assert_eq!(
                is_region(value),
                pattern.is_valid(&serde_json::json!(value)),
                "{value:?}"
            );
        }
    }
}
