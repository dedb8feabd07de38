"""Word lists the seeded world draws its names from.

Kept apart from world.py so the model stays readable; the abstention questions also draw "never seen" names from
here, which is why every list is larger than what one world uses.
"""

ADJECTIVES = [
    "Aurora", "Summit", "Harbor", "Cedar", "Falcon", "Nimbus", "Granite", "Willow", "Coastal", "Ember",
    "Glacier", "Meadow", "Orbit", "Prairie", "Quartz", "Ridge", "Sierra", "Tundra", "Vista", "Zephyr",
    "Alder", "Birch", "Canyon", "Delta", "Echo", "Fjord", "Juniper", "Lumen", "Mesa", "Pioneer",
]
MATERIALS = ["Trail", "Merino", "Canvas", "Fleece", "Linen", "Thermal", "Ripstop", "Denim", "Bamboo", "Alpine"]
CATEGORIES = {
    "Jackets": ["Jacket", "Shell", "Parka", "Windbreaker"],
    "Tops": ["Tee", "Hoodie", "Pullover", "Polo"],
    "Bottoms": ["Pant", "Short", "Legging", "Jogger"],
    "Bags": ["Backpack", "Duffel", "Tote", "Sling"],
    "Gear": ["Bottle", "Lantern", "Hammock", "Beanie"],
}
CODES = {"Jackets": "JK", "Tops": "TP", "Bottoms": "BT", "Bags": "BG", "Gear": "GR"}

FIRST_NAMES = [
    "Alex", "Priya", "Marcus", "Elena", "Jordan", "Sofia", "Liam", "Hana", "Diego", "Grace", "Omar", "Chloe",
    "Mateo", "Aisha", "Noah", "Yuki", "Ethan", "Leila", "Samuel", "Nora", "Victor", "Ines", "Tariq", "Maya",
    "Oscar", "Freya", "Kofi", "Lucia", "Ravi", "Zoe", "Felix", "Amara", "Hugo", "Selin", "Bruno", "Ada",
]
LAST_NAMES = [
    "Nguyen", "Patel", "Okafor", "Lindqvist", "Moreau", "Castillo", "Brennan", "Tanaka", "Haddad", "Kowalski",
    "Schmidt", "Rossi", "Adeyemi", "Fischer", "Novak", "Walsh", "Ibrahim", "Costa", "Larsen", "Mendes",
    "Sato", "Dubois", "Kaur", "Reyes", "Olsen", "Byrne", "Silva", "Horvat", "Yilmaz", "Park",
]
EMAIL_DOMAINS = ["gmail.com", "outlook.com", "yahoo.com", "proton.me", "fastmail.com"]
GROUPS = ["General", "Wholesale", "Retailer"]
COUNTRIES = ["United States", "Canada", "United Kingdom", "Germany", "Australia"]

# Settings that exist, and plausible ones that never do (for false-premise questions).
FAKE_SETTINGS = ["Loyalty Points Rate", "Gift Wrap Fee", "Abandoned Cart Reminder Delay", "Default Warehouse",
                 "Tax Display Mode", "Reward Tier Threshold"]
FAKE_EXPORT_FORMATS = ["PDF", "JSON", "XLSX"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December"]
