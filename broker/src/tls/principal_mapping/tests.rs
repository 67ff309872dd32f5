//! Kafka's own cases (`SslPrincipalMapperTest` and the examples of its security docs).

use super::*;

fn mapper(rules: &str) -> PrincipalMapper {
    PrincipalMapper::parse(rules).unwrap()
}

#[test]
fn kafkas_valid_rules_parse() {
    for rule in [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ] {
        assert!(PrincipalMapper::parse(rule).is_ok(), "{rule}");
    }
}

#[test]
fn kafkas_invalid_rules_are_refused() {
    for rule in [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ] {
        assert!(PrincipalMapper::parse(rule).is_err(), "{rule}");
    }
}

#[test]
fn kafkas_mapping_examples_map_as_kafka_maps_them() {
    let rules = [
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ]
    .join(", ");
    let mapper = mapper(&rules);
    let name = |dn: &str| mapper.name(dn).unwrap();
    assert_eq!(name("CN=Duke,OU=ServiceUsers,O=Org,C=US"), "duke");
    assert_eq!(
        name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
        "duke@sme"
    );
    assert_eq!(name("cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME");
    assert_eq!(name("cN=duke,OU=JavaSoft,O=Sun Microsystems"), "DUKE");
    assert_eq!(
        name("OU=JavaSoft,O=Sun Microsystems,C=US"),
        "OU=JavaSoft,O=Sun Microsystems,C=US"
    );
}

#[test]
fn the_security_docs_example_maps_service_and_admin_users() {
    let mapper = mapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\
         RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\
         RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\
         DEFAULT",
    );
    assert_eq!(
        mapper
            .name("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
            .unwrap(),
        "serviceuser"
    );
    assert_eq!(
        mapper
            .name("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
            .unwrap(),
        "adminuser@admin"
    );
}

#[test]
fn rules_split_as_kafka_splits_them() {
    let cases = [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        (
            "[RULE:   /     , DEFAULT]",
            "  RULE:   /     / ,  DEFAULT  ",
        ),
        (
            "[RULE:  /     /U, DEFAULT]",
            "  RULE:  /     /U   ,DEFAULT  ",
        ),
        (
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
        ),
        // Empty rules are ignored.
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        (
            "[RULE: /   , DEFAULT]",
            ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
        ),
        (
            "[RULE:   /  /U, DEFAULT]",
            "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
        ),
        // Escape sequences.
        (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
        (
            r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
            r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
        ),
        // Rules about rules.
        (
            r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
            r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
        ),
    ];
    for (expected, rules) in cases {
        assert_eq!(mapper(rules).to_string(), expected, "{rules:?}");
    }
}

#[test]
fn an_escaped_comma_stays_in_the_name() {
    let mapper = mapper(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT");
    assert_eq!(
        mapper
            .name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz")
            .unwrap(),
        r"Tkac\, Adam"
    );
}

#[test]
fn no_rule_applying_gives_no_name() {
    let mapper = mapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/");
    assert_eq!(mapper.name("CN=alice,OU=eng"), None);
    assert_eq!(PrincipalMapper::parse("").unwrap().name("CN=a"), None);
    assert_eq!(PrincipalMapper::default().name("CN=a"), Some("CN=a".into()));
}

#[test]
fn replacements_expand_as_javas_replace_all() {
    // A group the pattern lacks is literal text (Kafka's escapeLiteralBackReferences); $12
    // falls back to $1 followed by "2".
    let name = |rules: &str, dn: &str| mapper(rules).name(dn).unwrap();
    assert_eq!(name("RULE:^CN=(.*)$/$1@$4/", "CN=a"), "a@$4");
    assert_eq!(name("RULE:^CN=(.*)$/$12/", "CN=a"), "a2");
    assert_eq!(name(r"RULE:^CN=(.*)$/\$1=$1/", "CN=a"), "$1=a");
    assert_eq!(name("RULE:^CN=(?<user>.*)$/${user}!/", "CN=a"), "a!");
    // Java replaces the empty match at the end too.
    assert_eq!(name("RULE:.*/x/", "CN=a"), "xx");
    assert_eq!(name("RULE:^CN=([a-z]+)(,OU=x)?$/$1$2/", "CN=bob"), "bob");
}

#[test]
fn rules_that_cannot_work_are_refused_at_startup() {
    let error = |rules: &str| PrincipalMapper::parse(rules).unwrap_err();
    assert!(error("RULE:^CN=(?=x).*$/$1/").contains("pattern not supported"));
    assert!(error("RULE:^CN=.*$/$1/").contains("names group 1, the pattern has 0"));
    assert!(error("RULE:^CN=(.*)$/$x/").contains("without a group number"));
    assert!(error("RULE:^CN=(.*)$/${nope}/").contains("names no group"));
}
