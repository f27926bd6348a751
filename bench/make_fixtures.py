"""Writes the token-economy fixtures: five self-contained pages shaped like common real-world page types."""

from __future__ import annotations

import html
import json
import random
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Real pages ship a lot of styling inline; this is what a typical utility-first build leaves in <head>.
BASE_CSS = """
:root{--brand:#0b5fff;--brand-dark:#0844b8;--ink:#1b1f24;--muted:#5c6670;--line:#e3e7eb;--bg:#f6f8fa;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--radius:8px;--shadow:0 1px 2px rgba(0,0,0,.06),0 4px 12px rgba(0,0,0,.06)}
*,*::before,*::after{box-sizing:border-box}html{-webkit-text-size-adjust:100%;line-height:1.5}
body{margin:0;font:15px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:#fff}
a{color:var(--brand);text-decoration:none}a:hover{text-decoration:underline}img,svg{vertical-align:middle}
.container{max-width:1200px;margin:0 auto;padding:0 16px}.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
.site-header{border-bottom:1px solid var(--line);background:#fff;position:sticky;top:0;z-index:50}
.site-header__inner{display:flex;align-items:center;gap:24px;height:64px}.logo{font-weight:800;font-size:20px;color:var(--ink);letter-spacing:-.02em}
.nav{display:flex;gap:4px;list-style:none;margin:0;padding:0}.nav__item{position:relative}.nav__link{display:block;padding:8px 12px;border-radius:6px;color:var(--ink);font-weight:500}
.nav__link:hover{background:var(--bg);text-decoration:none}.mega{display:none;position:absolute;left:0;top:100%;background:#fff;border:1px solid var(--line);border-radius:var(--radius);box-shadow:var(--shadow);padding:16px;min-width:560px;grid-template-columns:repeat(3,1fr);gap:12px}
.nav__item:hover .mega{display:grid}.mega__title{font-size:12px;text-transform:uppercase;color:var(--muted);letter-spacing:.06em;margin:0 0 6px}.mega ul{list-style:none;margin:0;padding:0}.mega li a{display:block;padding:3px 0;color:var(--ink)}
.search{flex:1;display:flex}.search input{flex:1;height:40px;border:1px solid var(--line);border-radius:20px 0 0 20px;padding:0 16px;font:inherit}.search button{height:40px;border:0;background:var(--brand);color:#fff;border-radius:0 20px 20px 0;padding:0 18px;font-weight:600}
.btn{display:inline-flex;align-items:center;gap:6px;height:38px;padding:0 16px;border-radius:6px;border:1px solid transparent;font:600 14px/1 inherit;cursor:pointer}.btn--primary{background:var(--brand);color:#fff}.btn--primary:hover{background:var(--brand-dark)}
.btn--ghost{background:#fff;border-color:var(--line);color:var(--ink)}.badge{display:inline-block;font-size:12px;font-weight:600;padding:2px 8px;border-radius:999px;background:var(--bg);color:var(--muted)}
.badge--sale{background:#fff1f0;color:var(--bad)}.badge--new{background:#eef6ff;color:var(--brand)}.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:20px}
.card{border:1px solid var(--line);border-radius:var(--radius);overflow:hidden;background:#fff;display:flex;flex-direction:column}.card__media{aspect-ratio:1/1;background:var(--bg);display:flex;align-items:center;justify-content:center}
.card__body{padding:12px 14px;display:flex;flex-direction:column;gap:6px;flex:1}.card__title{font-size:15px;font-weight:600;margin:0;color:var(--ink)}.price{font-weight:700;font-size:17px}.price--was{color:var(--muted);text-decoration:line-through;font-weight:400;font-size:14px;margin-left:6px}
.rating{display:flex;align-items:center;gap:4px;color:var(--warn);font-size:13px}.rating span{color:var(--muted)}.breadcrumbs{display:flex;gap:6px;list-style:none;padding:12px 0;margin:0;font-size:13px;color:var(--muted)}.breadcrumbs li+li::before{content:"/";margin-right:6px;color:var(--line)}
.layout{display:grid;grid-template-columns:260px 1fr;gap:32px;padding:16px 0 48px}.facets{font-size:14px}.facet{border-bottom:1px solid var(--line);padding:12px 0}.facet h3{font-size:14px;margin:0 0 8px}.facet label{display:flex;gap:8px;align-items:center;padding:2px 0}
.toolbar{display:flex;justify-content:space-between;align-items:center;margin-bottom:16px}.pagination{display:flex;gap:6px;justify-content:center;margin:32px 0;list-style:none;padding:0}.pagination a{display:block;min-width:36px;height:36px;line-height:36px;text-align:center;border:1px solid var(--line);border-radius:6px}
.site-footer{background:#0d1117;color:#c9d1d9;padding:48px 0 24px;font-size:14px}.site-footer a{color:#c9d1d9}.footer-cols{display:grid;grid-template-columns:repeat(5,1fr);gap:24px}.footer-cols h4{color:#fff;font-size:13px;text-transform:uppercase;letter-spacing:.06em}
.footer-cols ul{list-style:none;margin:0;padding:0}.footer-cols li{padding:3px 0}.legal{border-top:1px solid #30363d;margin-top:32px;padding-top:16px;display:flex;justify-content:space-between;color:#8b949e}
.cookie-banner{position:fixed;bottom:16px;left:16px;right:16px;max-width:720px;margin:auto;background:#fff;border:1px solid var(--line);border-radius:var(--radius);box-shadow:var(--shadow);padding:16px;display:flex;gap:16px;align-items:center;z-index:100}
.article{max-width:720px;margin:0 auto;font-size:18px;line-height:1.7}.article h1{font-size:40px;line-height:1.15;letter-spacing:-.02em;margin:16px 0}.byline{display:flex;gap:12px;align-items:center;color:var(--muted);font-size:14px}.lede{font-size:21px;color:#3d4650}
figure{margin:24px 0}figcaption{font-size:13px;color:var(--muted);margin-top:6px}.pullquote{border-left:4px solid var(--brand);padding-left:16px;font-size:22px;font-style:italic}.related{display:grid;grid-template-columns:repeat(3,1fr);gap:16px}
.result{padding:14px 0;border-bottom:1px solid var(--line)}.result__url{color:var(--ok);font-size:13px}.result__title{font-size:19px;margin:2px 0}.result__snippet{color:#3d4650;font-size:14px}.chip{display:inline-block;border:1px solid var(--line);border-radius:999px;padding:4px 12px;font-size:13px;margin-right:6px}
.docs{display:grid;grid-template-columns:240px 1fr 200px;gap:32px}.sidebar{font-size:14px;position:sticky;top:80px;align-self:start;max-height:calc(100vh - 96px);overflow:auto}.sidebar ul{list-style:none;padding-left:12px;margin:0}.sidebar a{color:var(--ink);display:block;padding:3px 0}
.sidebar a.active{color:var(--brand);font-weight:600}pre{background:#0d1117;color:#e6edf3;padding:14px 16px;border-radius:var(--radius);overflow:auto;font:13px/1.55 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--bg);padding:1px 5px;border-radius:4px}
pre code{background:none;padding:0}.tok-k{color:#ff7b72}.tok-s{color:#a5d6ff}.tok-c{color:#8b949e;font-style:italic}.tok-f{color:#d2a8ff}.tok-n{color:#79c0ff}.callout{border:1px solid var(--line);border-left:4px solid var(--warn);padding:12px 16px;border-radius:6px;background:#fff8e5}
table.params{border-collapse:collapse;width:100%;font-size:14px}table.params th,table.params td{border-bottom:1px solid var(--line);padding:8px;text-align:left;vertical-align:top}.toc{font-size:13px;position:sticky;top:80px}.toc ul{list-style:none;padding:0}
.checkout{display:grid;grid-template-columns:1fr 380px;gap:40px;padding:24px 0 64px}.steps{display:flex;gap:8px;list-style:none;padding:0;margin:0 0 24px}.steps li{flex:1;border-top:3px solid var(--line);padding-top:6px;font-size:13px;color:var(--muted)}.steps li.current{border-color:var(--brand);color:var(--ink);font-weight:600}
fieldset{border:1px solid var(--line);border-radius:var(--radius);padding:16px 20px;margin:0 0 20px}legend{font-weight:700;padding:0 6px}.field{display:flex;flex-direction:column;gap:4px;margin-bottom:12px}.field label{font-size:13px;font-weight:600}.field input,.field select{height:40px;border:1px solid #c9d1d9;border-radius:6px;padding:0 12px;font:inherit}
.field--row{display:grid;grid-template-columns:1fr 1fr;gap:12px}.hint{font-size:12px;color:var(--muted)}.error{font-size:12px;color:var(--bad)}.summary{border:1px solid var(--line);border-radius:var(--radius);padding:20px;background:var(--bg);align-self:start;position:sticky;top:80px}
.summary__line{display:flex;justify-content:space-between;padding:4px 0}.summary__total{border-top:1px solid var(--line);margin-top:8px;padding-top:8px;font-weight:800;font-size:18px}
@media (max-width:900px){.layout,.docs,.checkout{grid-template-columns:1fr}.facets,.sidebar,.toc{display:none}.footer-cols{grid-template-columns:repeat(2,1fr)}}
"""

# A consent manager and a tag manager are inlined on most commercial pages; these do nothing over the network.
BOILERPLATE_SCRIPT = """
window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());
gtag('config','G-XXXXXXX',{anonymize_ip:true,send_page_view:false});
(function(w,d){var c=d.cookie.match(/consent=([^;]+)/);w.__consent=c?JSON.parse(decodeURIComponent(c[1])):{ads:false,analytics:false};
d.addEventListener('click',function(e){var b=e.target.closest('[data-consent]');if(!b)return;var v=b.getAttribute('data-consent')==='accept';
w.__consent={ads:v,analytics:v};d.cookie='consent='+encodeURIComponent(JSON.stringify(w.__consent))+';path=/;max-age=31536000;SameSite=Lax';
var el=d.getElementById('cookie-banner');if(el)el.remove();});})(window,document);
(function(){var t=document.querySelectorAll('[data-track]');for(var i=0;i<t.length;i++){t[i].addEventListener('click',function(){
window.dataLayer.push({event:'ui_click',label:this.getAttribute('data-track')});});}})();
"""

ICONS = {
    "cart": '<svg aria-hidden="true" width="20" height="20" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><circle cx="9" cy="21" r="1"/><circle cx="20" cy="21" r="1"/><path d="M1 1h4l2.68 13.39a2 2 0 0 0 2 1.61h9.72a2 2 0 0 0 2-1.61L23 6H6"/></svg>',
    "user": '<svg aria-hidden="true" width="20" height="20" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M20 21v-2a4 4 0 0 0-4-4H8a4 4 0 0 0-4 4v2"/><circle cx="12" cy="7" r="4"/></svg>',
    "heart": '<svg aria-hidden="true" width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2"><path d="M20.84 4.61a5.5 5.5 0 0 0-7.78 0L12 5.67l-1.06-1.06a5.5 5.5 0 0 0-7.78 7.78l1.06 1.06L12 21.23l7.78-7.78 1.06-1.06a5.5 5.5 0 0 0 0-7.78z"/></svg>',
    "star": '<svg aria-hidden="true" width="14" height="14" viewBox="0 0 24 24" fill="currentColor"><path d="M12 2l3.09 6.26L22 9.27l-5 4.87 1.18 6.88L12 17.77l-6.18 3.25L7 14.14 2 9.27l6.91-1.01L12 2z"/></svg>',
    "search": '<svg aria-hidden="true" width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2"><circle cx="11" cy="11" r="8"/><path d="M21 21l-4.35-4.35"/></svg>',
    "lock": '<svg aria-hidden="true" width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2"><rect x="3" y="11" width="18" height="11" rx="2" ry="2"/><path d="M7 11V7a5 5 0 0 1 10 0v4"/></svg>',
    "copy": '<svg aria-hidden="true" width="14" height="14" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2"><rect x="9" y="9" width="13" height="13" rx="2" ry="2"/><path d="M5 15H4a2 2 0 0 1-2-2V4a2 2 0 0 1 2-2h9a2 2 0 0 1 2 2v1"/></svg>',
}


def placeholder_image(label: str, width: int, height: int, hue: int) -> str:
    """An inline SVG standing in for a product or article photo, as real pages inline their LQIP placeholders."""
    return (
        f'<svg role="img" aria-label="{html.escape(label)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f'<rect width="100%" height="100%" fill="hsl({hue},45%,88%)"/>'
        f'<circle cx="{width // 2}" cy="{height // 2 - 10}" r="{min(width, height) // 5}" fill="hsl({hue},55%,62%)"/>'
        f'<rect x="{width // 4}" y="{height * 2 // 3}" width="{width // 2}" height="{height // 12}" rx="4" '
        f'fill="hsl({hue},35%,70%)"/></svg>'
    )


def page(title: str, body: str, *, description: str, extra_head: str = "", body_class: str = "") -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<meta name="description" content="{html.escape(description)}">
<meta property="og:title" content="{html.escape(title)}">
<meta property="og:description" content="{html.escape(description)}">
<meta property="og:type" content="website">
<meta name="twitter:card" content="summary_large_image">
<meta name="theme-color" content="#0b5fff">
<link rel="icon" href="data:,">
<style>{BASE_CSS}</style>
{extra_head}
<script>{BOILERPLATE_SCRIPT}</script>
</head>
<body class="{body_class}">
<a class="sr-only" href="#main">Skip to content</a>
{body}
<div class="cookie-banner" id="cookie-banner" role="dialog" aria-label="Cookie consent">
  <p style="margin:0;flex:1;font-size:14px">We use cookies to remember your preferences, measure traffic and personalise
  content. You can accept all cookies or only the ones we need to run this site. See our <a href="/privacy">privacy
  notice</a> for details.</p>
  <button class="btn btn--ghost" type="button" data-consent="reject">Only necessary</button>
  <button class="btn btn--primary" type="button" data-consent="accept">Accept all</button>
</div>
</body>
</html>
"""


def header_html(brand: str, sections: dict[str, list[str]], rng: random.Random) -> str:
    items = []
    for section, groups in sections.items():
        columns = []
        for group in groups:
            links = "".join(
                f'<li><a href="/c/{slug(section)}/{slug(group)}/{n}" data-track="mega-{slug(group)}-{n}">'
                f"{group} {word}</a></li>"
                for n, word in enumerate(rng.sample(LINK_WORDS, 5))
            )
            columns.append(f'<div><p class="mega__title">{group}</p><ul>{links}</ul></div>')
        items.append(
            f'<li class="nav__item"><a class="nav__link" href="/c/{slug(section)}" aria-haspopup="true">{section}</a>'
            f'<div class="mega">{"".join(columns)}</div></li>'
        )
    return f"""<header class="site-header"><div class="container site-header__inner">
<a class="logo" href="/" aria-label="{brand} home">{brand}</a>
<nav aria-label="Main"><ul class="nav">{"".join(items)}</ul></nav>
<form class="search" role="search" action="/search" method="get"><label class="sr-only" for="q">Search</label>
<input id="q" name="q" type="search" placeholder="Search {brand}" autocomplete="off">
<button type="submit" aria-label="Search">{ICONS["search"]}</button></form>
<a class="btn btn--ghost" href="/account" data-track="header-account">{ICONS["user"]}<span>Account</span></a>
<a class="btn btn--ghost" href="/cart" data-track="header-cart">{ICONS["cart"]}<span>Cart (2)</span></a>
</div></header>"""


def footer_html(brand: str, rng: random.Random) -> str:
    columns = []
    for heading in ("Shop", "Help", "Company", "Community", "Legal"):
        links = "".join(f'<li><a href="/{slug(heading)}/{slug(w)}">{w}</a></li>' for w in rng.sample(FOOTER_WORDS, 7))
        columns.append(f"<div><h4>{heading}</h4><ul>{links}</ul></div>")
    return f"""<footer class="site-footer"><div class="container">
<div class="footer-cols">{"".join(columns)}</div>
<div class="legal"><span>&copy; 2025 {brand} Ltd. Registered office: 12 Harbour Row, Portsmouth PO1 3AA.
VAT no. GB 123 4567 89.</span><span><a href="/privacy">Privacy</a> &middot; <a href="/terms">Terms</a> &middot;
<a href="/cookies">Cookie settings</a> &middot; <a href="/accessibility">Accessibility</a></span></div>
</div></footer>"""


def slug(text: str) -> str:
    return "-".join(text.lower().replace("&", "and").split())


LINK_WORDS = [
    "Essentials", "New in", "Best sellers", "Sale", "Gift ideas", "Bundles", "Refurbished", "Accessories",
    "Spare parts", "Trending", "Eco range", "Premium", "Starter kits", "Clearance", "Exclusives", "Brands A-Z",
]  # fmt: skip
FOOTER_WORDS = [
    "Delivery", "Returns", "Track an order", "Contact us", "Store finder", "Careers", "Press", "Sustainability",
    "Gift cards", "Student discount", "Affiliates", "Blog", "Forum", "Size guide", "Warranty", "Recalls",
    "Modern slavery statement", "Investors", "Terms of sale", "Price match",
]  # fmt: skip
SHOP_SECTIONS = {
    "Kitchen": ["Cookware", "Small appliances", "Knives", "Storage"],
    "Home": ["Lighting", "Bedding", "Furniture"],
    "Garden": ["Tools", "Watering", "Outdoor living"],
    "Tech": ["Audio", "Smart home", "Cables & chargers"],
    "Offers": ["This week", "Clearance", "Bundles"],
}
ADJECTIVES = ["Classic", "Pro", "Compact", "Deluxe", "Essential", "Heritage", "Nordic", "Urban", "Signature", "Eco"]
NOUNS = [
    "Stainless Steel Saucepan", "Cast Iron Casserole", "Non-stick Frying Pan", "Chef's Knife 20cm", "Glass Storage Set",
    "Electric Kettle 1.7L", "4-Slice Toaster", "Stand Mixer", "Bamboo Chopping Board", "Digital Kitchen Scale",
    "Pour-over Coffee Set", "Enamel Roasting Tin", "Silicone Utensil Set", "Cafetière 8-cup", "Spice Rack",
]  # fmt: skip
LOREM = [
    "The council said the new timetable would take effect from the spring",
    "A consultation on the plans drew more than four thousand responses",
    "Residents in the outer districts had complained for years that the last buses left too early for shift workers",
    "Several businesses said staff had turned down jobs because they could not get home after a late shift",
    "Officials estimated the change would cost about 2.4 million a year",
    "The money is to be met partly from parking revenue and partly from a regional transport grant",
    "Opposition members questioned whether the figures were realistic",
    "They asked for the assumptions to be published before the final vote",
    "A spokesperson for the operator said drivers had been consulted",
    "Recruitment was already under way to cover the extra late services",
    "Hospital staff on night rotas were among the most frequent respondents",
    "The last departure from Harbour Street will move from 23:10 to 00:40 on weekdays",
    "Weekend services will run every 30 minutes until 02:00 on the two busiest routes",
    "Campaigners welcomed the decision but said rural villages had again been left out",
    "The council will review passenger numbers after six months and publish the results",
    "Fares will not change, and concessionary passes will be valid on the new services",
]


def product_listing(rng: random.Random) -> str:
    cards = []
    for n in range(24):
        name = f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
        price = rng.randrange(899, 24999) / 100
        was = price * rng.choice([1.0, 1.0, 1.25, 1.4])
        reviews = rng.randrange(3, 2400)
        stars = round(rng.uniform(3.2, 5.0), 1)
        badge = rng.choice(
            ["", "", '<span class="badge badge--sale">Sale</span>', '<span class="badge badge--new">New</span>']
        )
        was_html = f'<span class="price--was">£{was:.2f}</span>' if was > price else ""
        sku = f"{rng.randrange(100000, 999999)}"
        cards.append(f"""<article class="card" data-sku="{sku}" data-position="{n + 1}" data-list="category-grid">
<a class="card__media" href="/p/{slug(name)}-{sku}" data-track="plp-card-{sku}" tabindex="-1">{placeholder_image(name, 220, 220, rng.randrange(360))}</a>
<div class="card__body">{badge}
<h2 class="card__title"><a href="/p/{slug(name)}-{sku}" data-track="plp-title-{sku}">{name}</a></h2>
<div class="rating" aria-label="Rated {stars} out of 5">{ICONS["star"] * int(stars)}<span>{stars} ({reviews:,})</span></div>
<div><span class="price">£{price:.2f}</span>{was_html}</div>
<p class="hint" style="margin:0">{rng.choice(["Free delivery over £40", "Click & collect in 2 hours", "Only 3 left", "Delivery in 3-5 days"])}</p>
<div style="display:flex;gap:8px;margin-top:auto"><button class="btn btn--primary" type="button" data-add-to-cart="{sku}">Add to basket</button>
<button class="btn btn--ghost" type="button" aria-label="Save {name} to wishlist">{ICONS["heart"]}</button></div>
</div></article>""")
    facets = []
    for title, options in [
        ("Brand", ["Harbour & Co", "Kitchenist", "Fjordware", "Le Cuisinier", "Brightline", "Oakhaus", "Sable"]),
        ("Price", ["Under £20", "£20 - £50", "£50 - £100", "£100 - £200", "Over £200"]),
        ("Material", ["Stainless steel", "Cast iron", "Aluminium", "Ceramic", "Glass", "Bamboo", "Copper"]),
        ("Customer rating", ["4 stars & up", "3 stars & up", "2 stars & up"]),
        ("Colour", ["Black", "Silver", "Red", "Cream", "Sage green", "Navy", "Copper"]),
        ("Availability", ["In stock online", "Click & collect today", "Include out of stock"]),
    ]:
        rows = "".join(
            f'<label><input type="checkbox" name="{slug(title)}" value="{slug(o)}"> {o} '
            f'<span class="hint">({rng.randrange(2, 140)})</span></label>'
            for o in options
        )
        facets.append(f'<div class="facet"><h3>{title}</h3>{rows}</div>')
    schema = {
        "@context": "https://schema.org",
        "@type": "ItemList",
        "itemListElement": [{"@type": "ListItem", "position": i + 1, "url": f"/p/item-{i}"} for i in range(24)],
    }
    body = f"""{header_html("Harbourhome", SHOP_SECTIONS, rng)}
<main id="main" class="container">
<ol class="breadcrumbs" aria-label="Breadcrumb"><li><a href="/">Home</a></li><li><a href="/c/kitchen">Kitchen</a></li><li aria-current="page">Cookware</li></ol>
<h1 style="margin:0 0 4px">Cookware</h1><p class="hint">1,284 products</p>
<div class="layout"><aside class="facets" aria-label="Filters"><h2 style="font-size:16px">Filter by</h2>{"".join(facets)}</aside>
<section aria-label="Products"><div class="toolbar"><span>Showing 1-24 of 1,284</span>
<label>Sort by <select name="sort"><option>Recommended</option><option>Price: low to high</option><option>Price: high to low</option><option>Customer rating</option><option>Newest</option></select></label></div>
<div class="grid">{"".join(cards)}</div>
<nav aria-label="Pagination"><ul class="pagination"><li><a href="?page=1" aria-current="page">1</a></li><li><a href="?page=2">2</a></li><li><a href="?page=3">3</a></li><li><a href="?page=27">27</a></li><li><a href="?page=2" rel="next">Next</a></li></ul></nav>
</section></div></main>
{footer_html("Harbourhome", rng)}"""
    return page(
        "Cookware | Kitchen | Harbourhome",
        body,
        description="Shop 1,284 cookware products: pans, casseroles, knives and more, with free delivery over £40.",
        extra_head=f'<script type="application/ld+json">{json.dumps(schema)}</script>',
    )


def news_article(rng: random.Random) -> str:
    paragraphs = []
    for n in range(34):
        sentences = rng.sample(LOREM, 4)
        paragraphs.append(f"<p>{'. '.join(sentences)}.</p>")
        if n in (6, 19):
            paragraphs.append(
                f"<figure>{placeholder_image('A double-decker bus at the Harbour Street terminus at dusk', 720, 405, 210)}"
                "<figcaption>Late services from the Harbour Street terminus will run until 00:40 from April. "
                "Photograph: Staff photographer</figcaption></figure>"
            )
        if n == 12:
            paragraphs.append(
                '<blockquote class="pullquote"><p>"People have been stuck choosing between a job and getting home. '
                'This fixes that for thousands of them."</p></blockquote>'
            )
        if n in (9, 24):
            paragraphs.append(
                '<aside class="callout" aria-label="Advertisement" data-ad-slot="in-article-'
                f'{n}" style="min-height:250px"><span class="hint">Advertisement</span></aside>'
            )
    related = "".join(
        f'<article class="card"><a class="card__media" href="/news/local/{n}">{placeholder_image("Related story", 220, 124, rng.randrange(360))}</a>'
        f'<div class="card__body"><h3 class="card__title"><a href="/news/local/{n}">{title}</a></h3>'
        f'<span class="hint">{rng.randrange(1, 23)} hours ago</span></div></article>'
        for n, title in enumerate(
            [
                "Harbour bridge closure extended by three weeks",
                "School meals contract goes back out to tender",
                "New cycle lanes: what changes on the ring road",
                "Library opening hours restored after campaign",
                "Council tax to rise 4.9% as budget is approved",
                "Ferry operator adds winter sailings to the islands",
            ]
        )
    )
    comments = "".join(
        f'<li class="result"><strong>{rng.choice(["harbourlights", "commuter_77", "Jen M", "oldtownresident", "B. Okafor", "cyclistnotcyclist"])}</strong> '
        f'<span class="hint">{rng.randrange(1, 59)} min ago</span><p>{rng.choice(LOREM)}.</p>'
        f'<button class="btn btn--ghost" type="button">Reply</button> <button class="btn btn--ghost" type="button" aria-label="Recommend">&#9650; {rng.randrange(0, 80)}</button></li>'
        for _ in range(18)
    )
    schema = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": "Late-night buses return to the outer districts from April",
        "datePublished": "2025-02-11T07:30:00Z",
        "author": {"@type": "Person", "name": "Priya Castellano"},
        "publisher": {"@type": "Organization", "name": "The Harbour Gazette"},
    }
    sections = {
        "News": ["Local", "Politics", "Transport"],
        "Sport": ["Football", "Rugby", "Sailing"],
        "Business": ["Jobs", "Property", "Markets"],
        "Culture": ["Music", "Food & drink", "What's on"],
        "Opinion": ["Columnists", "Letters", "Editorials"],
    }
    body = f"""{header_html("The Harbour Gazette", sections, rng)}
<main id="main" class="container"><ol class="breadcrumbs" aria-label="Breadcrumb"><li><a href="/news">News</a></li><li><a href="/news/transport">Transport</a></li></ol>
<article class="article"><span class="badge badge--new">Transport</span>
<h1>Late-night buses return to the outer districts from April</h1>
<p class="lede">Council approves a new timetable after a consultation in which shift workers said the last buses left too early to get them home.</p>
<div class="byline">{placeholder_image("Priya Castellano", 40, 40, 20)}<span>By <a href="/profile/priya-castellano" rel="author">Priya Castellano</a>, transport correspondent</span>
<time datetime="2025-02-11T07:30:00Z">Tue 11 Feb 2025 07.30 GMT</time><button class="btn btn--ghost" type="button" aria-label="Share this article">Share</button></div>
{"".join(paragraphs)}
<p><em>This article was amended on 11 February 2025 to correct the cost estimate.</em></p>
<section aria-label="Comments"><h2>Comments (186)</h2><form><label class="sr-only" for="c">Your comment</label><textarea id="c" rows="3" style="width:100%"></textarea><button class="btn btn--primary" type="submit">Post comment</button></form><ul style="list-style:none;padding:0">{comments}</ul></section>
</article>
<section aria-label="Related stories"><h2>More on this story</h2><div class="related">{related}</div></section>
</main>
{footer_html("The Harbour Gazette", rng)}"""
    return page(
        "Late-night buses return to the outer districts from April | The Harbour Gazette",
        body,
        description="Council approves a new timetable after a consultation drew 4,000 responses.",
        extra_head=f'<script type="application/ld+json">{json.dumps(schema)}</script>',
    )


def search_results(rng: random.Random) -> str:
    domains = [
        "docs.python.org", "stackoverflow.com", "realpython.com", "github.com", "wikipedia.org", "medium.com",
        "dev.to", "pypi.org", "readthedocs.io", "geeksforgeeks.org",
    ]  # fmt: skip
    results = []
    for n in range(30):
        domain = rng.choice(domains)
        path = "/".join(
            rng.sample(["asyncio", "tasks", "howto", "library", "questions", "12345", "timeout", "guide"], 3)
        )
        title = rng.choice(
            [
                "asyncio.wait_for — Coroutines and Tasks",
                "How to cancel an asyncio task after a timeout?",
                "Async IO in Python: A Complete Walkthrough",
                "Handling timeouts with asyncio.timeout() in Python 3.11",
                "Python asyncio: wait_for vs timeout context manager",
                "Graceful shutdown of asyncio tasks",
            ]
        )
        snippet = " ".join(
            rng.sample(
                [
                    "Wait for the single Future or coroutine to complete, with timeout.",
                    "If a timeout occurs, it cancels the task and raises TimeoutError.",
                    "To avoid the task cancellation, wrap it in shield().",
                    "New in version 3.11: the asyncio.timeout() asynchronous context manager.",
                    "This answer explains why the task is not cancelled immediately.",
                    "Use asyncio.gather with return_exceptions=True to collect results.",
                    "The event loop runs tasks cooperatively; a blocking call stalls every task.",
                ],
                3,
            )
        )
        sitelinks = ""
        if n in (0, 3):
            sitelinks = (
                '<div style="display:grid;grid-template-columns:1fr 1fr;gap:4px 24px;margin-top:6px;font-size:14px">'
                + "".join(
                    f'<a href="https://{domain}/{slug(s)}" data-ved="{rng.getrandbits(48):x}">{s}</a>'
                    for s in ["Coroutines and Tasks", "Event loop", "Streams", "Synchronization primitives"]
                )
                + "</div>"
            )
        results.append(
            f'<div class="result" data-hveid="{rng.getrandbits(32):x}" data-rank="{n + 1}">'
            f'<div class="result__url"><cite>https://{domain} › {path.replace("/", " › ")}</cite></div>'
            f'<h3 class="result__title"><a href="https://{domain}/{path}" data-ved="{rng.getrandbits(64):x}" ping="/url?sa=t&amp;source=web&amp;rct=j&amp;url={domain}">{title}</a></h3>'
            f'<p class="result__snippet"><span class="hint">{rng.randrange(1, 28)} Jan 2025 — </span>{snippet}</p>{sitelinks}</div>'
        )
        if n == 4:
            questions = "".join(
                f'<details class="result"><summary>{q}</summary><p>{rng.choice(LOREM)}.</p></details>'
                for q in [
                    "How do I set a timeout for an asyncio task?",
                    "What happens to a task when wait_for times out?",
                    "Is asyncio.timeout better than wait_for?",
                    "How do you cancel all running tasks?",
                ]
            )
            results.append(
                f'<section aria-label="People also ask"><h2 style="font-size:18px">People also ask</h2>{questions}</section>'
            )
    chips = "".join(
        f'<a class="chip" href="/search?q=asyncio+timeout+{slug(c)}">{c}</a>'
        for c in ["All", "Images", "Videos", "News", "Shopping", "Books", "Maps"]
    )
    related = "".join(
        f'<a class="chip" href="/search?q={slug(r)}">{r}</a>'
        for r in [
            "asyncio timeout example",
            "asyncio wait_for cancel",
            "python async timeout decorator",
            "asyncio.timeout 3.11",
            "aiohttp timeout",
            "asyncio shield",
        ]
    )
    body = f"""<header class="site-header"><div class="container site-header__inner"><a class="logo" href="/">Findr</a>
<form class="search" role="search" action="/search"><label class="sr-only" for="q">Search</label><input id="q" name="q" type="search" value="python asyncio timeout cancel task"><button type="submit" aria-label="Search">{ICONS["search"]}</button></form>
<a class="btn btn--ghost" href="/settings">Settings</a><a class="btn btn--primary" href="/login">Sign in</a></div></header>
<main id="main" class="container" style="max-width:760px;margin-left:180px"><nav aria-label="Search types" style="padding:12px 0">{chips}</nav>
<p class="hint">About 1,940,000 results (0.41 seconds)</p>{"".join(results)}
<section aria-label="Related searches"><h2 style="font-size:18px">Related searches</h2>{related}</section>
<nav aria-label="Pagination"><ul class="pagination">{"".join(f'<li><a href="/search?q=python+asyncio&amp;start={p * 10}">{p + 1}</a></li>' for p in range(10))}<li><a href="/search?start=10">Next</a></li></ul></nav>
</main>
<footer class="site-footer"><div class="container legal"><span>Portsmouth, UK — from your IP address</span><span><a href="/help">Help</a> · <a href="/feedback">Send feedback</a> · <a href="/privacy">Privacy</a> · <a href="/terms">Terms</a></span></div></footer>"""
    return page(
        "python asyncio timeout cancel task - Findr Search",
        body,
        description="Search results for python asyncio timeout",
    )


def documentation_page(rng: random.Random) -> str:
    nav_sections = {
        "Getting started": ["Installation", "Quickstart", "Configuration", "Upgrading"],
        "Guides": ["Authentication", "Pagination", "Webhooks", "Rate limits", "Errors", "Idempotency", "Testing"],
        "API reference": ["Runs", "Sessions", "Events", "Usage", "API keys", "Workspaces"],
        "SDKs": ["Python", "TypeScript", "Go", "Ruby"],
        "Resources": ["Changelog", "Status", "Support"],
    }
    sidebar = "".join(
        f"<li><strong>{s}</strong><ul>"
        + "".join(
            f'<li><a href="/docs/{slug(s)}/{slug(p)}"{ACTIVE if p == "Pagination" else ""}>{p}</a></li>' for p in pages
        )
        + "</ul></li>"
        for s, pages in nav_sections.items()
    )
    code_python = """<pre><code><span class="tok-k">from</span> pilothouse <span class="tok-k">import</span> Client

client <span class="tok-k">=</span> <span class="tok-f">Client</span>(api_key<span class="tok-k">=</span><span class="tok-s">"ph_..."</span>)
cursor <span class="tok-k">=</span> <span class="tok-n">None</span>
<span class="tok-k">while</span> <span class="tok-n">True</span>:
    page <span class="tok-k">=</span> client.runs.<span class="tok-f">list</span>(limit<span class="tok-k">=</span><span class="tok-n">100</span>, cursor<span class="tok-k">=</span>cursor)
    <span class="tok-k">for</span> run <span class="tok-k">in</span> page.data:
        <span class="tok-f">print</span>(run.id, run.status)  <span class="tok-c"># one line per run</span>
    <span class="tok-k">if not</span> page.has_more:
        <span class="tok-k">break</span>
    cursor <span class="tok-k">=</span> page.next_cursor</code></pre>"""
    code_curl = """<pre><code>curl https://api.example.com/v1/runs?limit=100 \\
  -H <span class="tok-s">"Authorization: Bearer $PILOTHOUSE_KEY"</span></code></pre>"""
    response = json.dumps(
        {
            "data": [
                {"id": f"run_{rng.getrandbits(64):016x}", "status": rng.choice(["succeeded", "failed", "running"])}
                for _ in range(3)
            ],
            "has_more": True,
            "next_cursor": "eyJjcmVhdGVkX2F0IjoiMjAyNS0wMi0xMVQwNzozMDowMFoiLCJpZCI6NDJ9",
        },
        indent=2,
    )
    params = "".join(
        f"<tr><td><code>{n}</code></td><td>{t}</td><td>{d}</td></tr>"
        for n, t, d in [
            ("limit", "integer", "How many items to return, 1 to 100. Default 20."),
            ("cursor", "string", "The <code>next_cursor</code> of the previous page. Omit for the first page."),
            ("status", "string", "Only runs in this status: queued, running, succeeded, failed or cancelled."),
            ("created_after", "datetime", "Only runs created after this instant (RFC 3339)."),
            ("created_before", "datetime", "Only runs created before this instant (RFC 3339)."),
            ("session_id", "string", "Only runs of this session."),
            ("order", "string", "<code>desc</code> (newest first, the default) or <code>asc</code>."),
        ]
    )
    sections = []
    for n, heading in enumerate(
        [
            "How cursors work",
            "Page sizes",
            "Filtering while paging",
            "Consistency",
            "Common mistakes",
            "Migrating from offsets",
        ]
    ):
        body_paragraphs = "".join(f"<p>{'. '.join(rng.sample(DOC_SENTENCES, 3))}.</p>" for _ in range(3))
        extra = code_python if n == 0 else (code_curl if n == 1 else "")
        if n == 3:
            extra = '<div class="callout" role="note"><strong>Note:</strong> a cursor is valid for 24 hours. After that, start again from the first page.</div>'
        sections.append(
            f'<section id="{slug(heading)}"><h2>{heading} <a href="#{slug(heading)}" aria-label="Link to this section">#</a></h2>{body_paragraphs}{extra}</section>'
        )
    toc = "".join(
        f'<li><a href="#{slug(h)}">{h}</a></li>'
        for h in [
            "Parameters",
            "Response",
            "How cursors work",
            "Page sizes",
            "Filtering while paging",
            "Consistency",
            "Common mistakes",
            "Migrating from offsets",
        ]
    )
    body = f"""<header class="site-header"><div class="container site-header__inner"><a class="logo" href="/docs">Pilothouse Docs</a>
<form class="search" role="search"><label class="sr-only" for="q">Search docs</label><input id="q" type="search" placeholder="Search docs (Ctrl K)"></form>
<a class="btn btn--ghost" href="/docs/changelog">Changelog</a><a class="btn btn--primary" href="/dashboard">Dashboard</a></div></header>
<div class="container docs"><nav class="sidebar" aria-label="Documentation"><ul>{sidebar}</ul></nav>
<main id="main"><ol class="breadcrumbs" aria-label="Breadcrumb"><li><a href="/docs/guides">Guides</a></li><li aria-current="page">Pagination</li></ol>
<h1>Pagination</h1><p class="lede">List endpoints return results a page at a time. Follow <code>next_cursor</code> until <code>has_more</code> is false.</p>
<h2 id="parameters">Parameters</h2><table class="params"><thead><tr><th>Name</th><th>Type</th><th>Description</th></tr></thead><tbody>{params}</tbody></table>
<h2 id="response">Response</h2><div style="position:relative"><button class="btn btn--ghost" type="button" style="position:absolute;right:8px;top:8px" aria-label="Copy code">{ICONS["copy"]}</button><pre><code>{html.escape(response)}</code></pre></div>
{"".join(sections)}
<nav style="display:flex;justify-content:space-between;margin:48px 0"><a href="/docs/guides/authentication">← Authentication</a><a href="/docs/guides/webhooks">Webhooks →</a></nav>
<form aria-label="Feedback" style="border-top:1px solid var(--line);padding-top:16px"><span>Was this page helpful?</span> <button class="btn btn--ghost" type="button">Yes</button> <button class="btn btn--ghost" type="button">No</button></form>
</main><aside class="toc" aria-label="On this page"><p class="mega__title">On this page</p><ul>{toc}</ul></aside></div>
{footer_html("Pilothouse", rng)}"""
    return page("Pagination · Pilothouse Docs", body, description="How cursor pagination works on list endpoints.")


ACTIVE = ' class="active" aria-current="page"'

DOC_SENTENCES = [
    "Cursors are opaque strings; do not parse or construct them yourself",
    "Each page is ordered by creation time, newest first, with the id as a tie-breaker",
    "A run created while you page through the list appears on the first page, not in the middle",
    "The default page size suits interactive use; batch jobs should ask for 100",
    "Filters apply before paging, so every page holds only matching items",
    "Changing a filter between pages invalidates the cursor and returns invalid_request",
    "Offsets get slower the deeper you page because the database must skip every earlier row",
    "Cursors stay fast at any depth because they seek directly to the next row",
    "The API answers 400 with invalid_request when the cursor is malformed or expired",
    "The SDKs expose an iterator that follows cursors for you",
]


def checkout_form(rng: random.Random) -> str:
    countries = [
        "United Kingdom", "Ireland", "France", "Germany", "Netherlands", "Belgium", "Spain", "Portugal", "Italy",
        "Denmark", "Sweden", "Norway", "Finland", "Poland", "Austria", "Switzerland", "Czechia", "Greece",
        "United States", "Canada", "Australia", "New Zealand", "Japan", "Singapore",
    ]  # fmt: skip
    country_options = "".join(
        f'<option value="{slug(c)}"{" selected" if c == "United Kingdom" else ""}>{c}</option>' for c in countries
    )
    months = "".join(f'<option value="{m:02d}">{m:02d}</option>' for m in range(1, 13))
    years = "".join(f"<option>{y}</option>" for y in range(2025, 2040))

    def field(
        label: str, name: str, kind: str = "text", *, autocomplete: str = "", hint: str = "", required: bool = True
    ) -> str:
        req = ' required aria-required="true"' if required else ""
        hint_html = f'<span class="hint" id="{name}-hint">{hint}</span>' if hint else ""
        described = f' aria-describedby="{name}-hint"' if hint else ""
        return (
            f'<div class="field"><label for="{name}">{label}{"" if required else " (optional)"}</label>'
            f'<input id="{name}" name="{name}" type="{kind}" autocomplete="{autocomplete}"{req}{described} '
            f'data-validate="{kind}" spellcheck="false">{hint_html}</div>'
        )

    contact = field(
        "Email address", "email", "email", autocomplete="email", hint="We'll send your order confirmation here."
    ) + field("Phone number", "phone", "tel", autocomplete="tel", hint="For delivery updates by text.", required=False)
    shipping = (
        '<div class="field--row">'
        + field("First name", "given-name", autocomplete="given-name")
        + field("Last name", "family-name", autocomplete="family-name")
        + "</div>"
        + field("Company", "organization", autocomplete="organization", required=False)
        + field("Address line 1", "address-line1", autocomplete="address-line1")
        + field("Address line 2", "address-line2", autocomplete="address-line2", required=False)
        + '<div class="field--row">'
        + field("Town or city", "address-level2", autocomplete="address-level2")
        + field("Postcode", "postal-code", autocomplete="postal-code")
        + "</div>"
        + f'<div class="field"><label for="country">Country</label><select id="country" name="country" autocomplete="country">{country_options}</select></div>'
    )
    delivery_options = "".join(
        f'<label style="display:flex;gap:10px;align-items:center;border:1px solid var(--line);border-radius:6px;padding:10px;margin-bottom:8px">'
        f'<input type="radio" name="delivery" value="{slug(name)}"{" checked" if n == 0 else ""}><span style="flex:1"><strong>{name}</strong><br><span class="hint">{when}</span></span><strong>{price}</strong></label>'
        for n, (name, when, price) in enumerate(
            [
                ("Standard delivery", "3-5 working days", "Free"),
                ("Next day delivery", "Order before 8pm for delivery tomorrow", "£5.99"),
                ("Nominated day", "Choose a day that suits you", "£6.99"),
                ("Click & collect", "Ready in 2 hours at Portsmouth Gunwharf", "Free"),
            ]
        )
    )
    payment = (
        field("Name on card", "cc-name", autocomplete="cc-name")
        + field(
            "Card number", "cc-number", "text", autocomplete="cc-number", hint="Visa, Mastercard or American Express."
        )
        + f'<div class="field--row"><div class="field"><label for="cc-exp-month">Expiry month</label><select id="cc-exp-month" name="cc-exp-month" autocomplete="cc-exp-month">{months}</select></div>'
        + f'<div class="field"><label for="cc-exp-year">Expiry year</label><select id="cc-exp-year" name="cc-exp-year" autocomplete="cc-exp-year">{years}</select></div></div>'
        + field(
            "Security code", "cc-csc", "text", autocomplete="cc-csc", hint="The last 3 digits on the back of your card."
        )
        + '<label style="display:flex;gap:8px"><input type="checkbox" name="billing-same" checked> Billing address is the same as delivery</label>'
    )
    lines = []
    subtotal = 0.0
    for _ in range(4):
        name = f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
        qty = rng.randrange(1, 3)
        price = rng.randrange(899, 12999) / 100
        subtotal += qty * price
        lines.append(
            f'<div class="summary__line" style="gap:12px">{placeholder_image(name, 56, 56, rng.randrange(360))}'
            f'<span style="flex:1">{name}<br><span class="hint">Qty {qty}</span></span><span>£{qty * price:.2f}</span></div>'
        )
    body = f"""<header class="site-header"><div class="container site-header__inner"><a class="logo" href="/">Harbourhome</a>
<span class="hint">{ICONS["lock"]} Secure checkout</span><a href="/cart" style="margin-left:auto">Back to basket</a></div></header>
<main id="main" class="container"><ol class="steps"><li>Basket</li><li class="current" aria-current="step">Details</li><li>Payment</li><li>Confirmation</li></ol>
<div class="checkout"><form action="/checkout/confirm" method="post" novalidate aria-label="Checkout">
<input type="hidden" name="csrfmiddlewaretoken" value="{rng.getrandbits(256):064x}"><input type="hidden" name="basket_id" value="{rng.getrandbits(64):016x}">
<fieldset><legend>Contact</legend>{contact}<label style="display:flex;gap:8px"><input type="checkbox" name="marketing"> Email me offers and news (you can unsubscribe at any time)</label></fieldset>
<fieldset><legend>Delivery address</legend>{shipping}</fieldset>
<fieldset><legend>Delivery method</legend>{delivery_options}</fieldset>
<fieldset><legend>Payment</legend>{payment}</fieldset>
<fieldset><legend>Gift options</legend><label style="display:flex;gap:8px"><input type="checkbox" name="gift"> This order is a gift</label>
<div class="field"><label for="gift-message">Gift message (optional)</label><textarea id="gift-message" name="gift-message" rows="3" maxlength="250"></textarea><span class="hint">Up to 250 characters.</span></div></fieldset>
<label style="display:flex;gap:8px;margin-bottom:16px"><input type="checkbox" name="terms" required> I agree to the <a href="/terms">terms of sale</a> and have read the <a href="/privacy">privacy notice</a></label>
<button class="btn btn--primary" type="submit" style="width:100%;height:48px;justify-content:center">Pay £{subtotal:.2f}</button>
</form>
<aside class="summary" aria-label="Order summary"><h2 style="margin-top:0;font-size:18px">Order summary</h2>{"".join(lines)}
<div class="field" style="margin-top:12px"><label for="promo">Promo code</label><div style="display:flex;gap:8px"><input id="promo" name="promo" style="flex:1"><button class="btn btn--ghost" type="button">Apply</button></div></div>
<div class="summary__line"><span>Subtotal</span><span>£{subtotal:.2f}</span></div><div class="summary__line"><span>Delivery</span><span>Free</span></div>
<div class="summary__line summary__total"><span>Total</span><span>£{subtotal:.2f}</span></div><p class="hint">Including VAT of £{subtotal / 6:.2f}</p></aside></div></main>
{footer_html("Harbourhome", rng)}"""
    return page("Checkout – Harbourhome", body, description="Secure checkout")


PAGES = {
    "product_listing.html": product_listing,
    "news_article.html": news_article,
    "search_results.html": search_results,
    "documentation.html": documentation_page,
    "checkout_form.html": checkout_form,
}


def write_fixtures(directory: Path) -> list[Path]:
    """Write every page into `directory`; the same bytes each time (each page's randomness is seeded by its name)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in PAGES.items():
        path = directory / name
        path.write_text(build(random.Random(name)), encoding="utf-8")
        written.append(path)
    return written


def main() -> None:
    for path in write_fixtures(FIXTURES):
        print(f"{path.name:24} {path.stat().st_size:>8,} bytes")


if __name__ == "__main__":
    main()
