"""Medical concepts the rule evaluator recognises, with their common spellings and broader terms."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache


@dataclass(frozen=True)
class Concept:
    """One condition, symptom, treatment or test result, with the ways people write it."""

    key: str
    name: str
    patterns: tuple[str, ...]
    parents: tuple[str, ...] = ()
    # Spellings that state the concept is absent ("non-smoker", "HIV negative").
    absent_patterns: tuple[str, ...] = ()
    # Words right before a match that mean a different thing ("ST depression" is not low mood).
    not_after: tuple[str, ...] = ()
    # Words right after a match that mean a different thing ("insulin resistance" is not insulin use).
    not_before: tuple[str, ...] = ()
    # Concepts that cannot hold together with this one: having type 2 diabetes rules out type 1.
    excludes: tuple[str, ...] = ()


def _c(
    key: str,
    name: str,
    *patterns: str,
    parents: tuple[str, ...] = (),
    absent: tuple[str, ...] = (),
    not_after: tuple[str, ...] = (),
    not_before: tuple[str, ...] = (),
    excludes: tuple[str, ...] = (),
) -> Concept:
    return Concept(key, name, patterns, parents, absent, not_after, not_before, excludes)


CONCEPTS: tuple[Concept, ...] = (
    # Heart and vessels
    _c("heart_disease", "heart disease", r"heart diseases?", r"cardiac diseases?", r"cardiovascular diseases?",
       r"heart conditions?", r"cardiac conditions?", parents=("cardiopulmonary_disease",)),
    _c("cardiopulmonary_disease", "heart or lung disease", r"cardiopulmonary diseases?", r"cardio-pulmonary diseases?"),
    _c("hypertension", "high blood pressure", r"hypertensi\w*", r"high blood pressure", r"\bHTN\b",
       r"elevated blood pressure", r"raised blood pressure"),
    _c("hypotension", "low blood pressure", r"hypotensi\w*", r"low blood pressure"),
    _c("heart_failure", "heart failure", r"heart failure", r"cardiac failure", r"\bCHF\b", r"\bHFrEF\b", r"\bHFpEF\b",
       r"cardiac insufficiency", r"congestive cardiac", parents=("heart_disease",)),
    _c("coronary_disease", "coronary artery disease", r"coronary (?:artery|heart) diseases?", r"\bCAD\b", r"\bCHD\b",
       r"isch(?:a)?emic heart diseases?", r"\bIHD\b", parents=("heart_disease",)),
    _c("myocardial_infarction", "heart attack", r"myocardial infarct\w*", r"\bN?STEMI\b", r"\bMI\b", r"heart attacks?",
       parents=("coronary_disease",)),
    _c("angina", "angina", r"angina(?: pectoris)?", parents=("coronary_disease",)),
    _c("unstable_angina", "unstable angina", r"unstable angina(?: pectoris)?", parents=("angina",)),
    _c("arrhythmia", "irregular heartbeat", r"arrh?ythmi\w*", r"dysrhythmi\w*", r"(?:AV|atrioventricular) blocks?",
       r"heart blocks?", r"ventricular tachycardia", r"ventricular fibrillation", parents=("heart_disease",)),
    _c("atrial_fibrillation", "atrial fibrillation", r"atrial fibrillation", r"\bA-?fib\b", r"\bAF\b",
       parents=("arrhythmia",)),
    _c("atrial_flutter", "atrial flutter", r"atrial flutter", parents=("arrhythmia",)),
    _c("valve_disease", "heart valve disease", r"valv(?:ular|e) (?:heart )?diseases?",
       r"(?:mitral|aortic|tricuspid|pulmonary) (?:valve )?(?:stenosis|regurgitation|insufficiency)",
       r"prosthetic (?:heart )?valves?", parents=("heart_disease",)),
    _c("cardiomyopathy", "cardiomyopathy", r"cardiomyopath\w*", parents=("heart_disease",)),
    _c("endocarditis", "endocarditis", r"endocarditis", parents=("heart_disease", "infection")),
    _c("myocarditis", "myocarditis", r"myocarditis", r"pericarditis", parents=("heart_disease",)),
    _c("stroke", "stroke", r"strokes?", r"\bCVA\b", r"cerebr(?:o|al) ?vascular accidents?", r"cerebral infarct\w*",
       parents=("cerebrovascular_disease",)),
    _c("tia", "mini-stroke (TIA)", r"transient isch(?:a)?emic attacks?", r"\bTIA\b", parents=("cerebrovascular_disease",)),
    _c("cerebrovascular_disease", "cerebrovascular disease", r"cerebrovascular diseases?", parents=("neurological_disease",)),
    _c("intracranial_bleeding", "bleeding in the brain", r"intracranial (?:h(?:a)?emorrhage|bleed\w*)",
       r"(?:brain|cerebral|subarachnoid|intracerebral) h(?:a)?emorrhage", parents=("cerebrovascular_disease", "bleeding")),
    _c("subdural_hematoma", "subdural hematoma", r"subdural h(?:a)?ematomas?", r"\bc?SDH\b", r"\bCSH\b",
       parents=("intracranial_bleeding",)),
    _c("peripheral_artery_disease", "peripheral artery disease", r"peripheral (?:arterial|artery|vascular) diseases?",
       r"\bPAD\b", r"arterial insufficiency", r"claudication"),
    _c("venous_thromboembolism", "blood clots", r"venous thromboembol\w*", r"\bVTE\b", r"thromboembol\w*",
       r"blood clots?"),
    _c("dvt", "deep vein thrombosis", r"deep ve(?:in|nous) thrombos[ie]s", r"\bDVT\b", parents=("venous_thromboembolism",)),
    _c("pulmonary_embolism", "pulmonary embolism", r"pulmonary (?:thrombo)?embol\w*", r"\bPE\b",
       parents=("venous_thromboembolism",)),
    _c("aneurysm", "aneurysm", r"aneurysms?"),
    # Metabolism and hormones
    _c("diabetes", "diabetes", r"diabet\w*(?: mellitus)?", r"\bDM\b", not_before=("insipidus",)),
    _c("type1_diabetes", "type 1 diabetes", r"type[- ]?(?:1|I|one) diabet\w*(?: mellitus)?", r"\bIDDM\b", r"\bT1DM?\b",
       r"insulin[- ]dependent diabet\w*(?: mellitus)?", r"juvenile diabet\w*", parents=("diabetes",),
       excludes=("type2_diabetes",)),
    _c("type2_diabetes", "type 2 diabetes", r"type[- ]?(?:2|II|two) diabet\w*(?: mellitus)?", r"\bNIDDM\b", r"\bT2DM?\b",
       r"non[- ]insulin[- ]dependent diabet\w*(?: mellitus)?", parents=("diabetes",), excludes=("type1_diabetes",)),
    _c("obesity", "obesity", r"obes\w*", r"morbid(?:ly)? obes\w*"),
    _c("dyslipidemia", "high cholesterol or blood fats", r"dyslipid(?:a)?emi\w*", r"hyperlipid\w*", r"hypercholesterol\w*",
       r"high cholesterol", r"hypertriglycerid\w*", r"lipid metabolism abnormalit\w*"),
    _c("thyroid_disease", "thyroid disease", r"thyroid (?:diseases?|disorders?|dysfunction)"),
    _c("hypothyroidism", "underactive thyroid", r"hypothyroid\w*", r"underactive thyroid", parents=("thyroid_disease",)),
    _c("hyperthyroidism", "overactive thyroid", r"hyperthyroid\w*", r"graves'? disease", r"thyrotoxicosis",
       parents=("thyroid_disease",)),
    _c("osteoporosis", "osteoporosis", r"osteopor\w*"),
    _c("insulin_resistance", "insulin resistance", r"insulin resistan\w*"),
    # Kidneys and liver
    _c("kidney_disease", "kidney disease", r"(?:renal|kidney) (?:diseases?|insufficiency|impairment|dysfunction|failure)",
       r"\bCKD\b", r"\bESRD\b", r"end[- ]stage renal", r"end[- ]stage kidney", r"nephropath\w*"),
    _c("acute_kidney_injury", "sudden kidney injury", r"acute (?:kidney|renal) (?:injury|failure|insufficiency)",
       r"\bAKI\b", parents=("kidney_disease",)),
    _c("dialysis", "dialysis", r"(?:h(?:a)?emo|peritoneal )?dialysis", r"renal replacement therapy"),
    _c("liver_disease", "liver disease", r"(?:liver|hepatic) (?:diseases?|dysfunction|impairment|insufficiency|failure)",
       r"hepatopath\w*"),
    _c("cirrhosis", "cirrhosis", r"cirrho\w*", parents=("liver_disease",)),
    _c("hepatitis", "hepatitis", r"hepatitis", parents=("liver_disease", "infection")),
    _c("hepatitis_b", "hepatitis B", r"hepatitis B", r"\bHBV\b", r"\bHBsAg\b", parents=("hepatitis",)),
    _c("hepatitis_c", "hepatitis C", r"hepatitis C", r"\bHCV\b", parents=("hepatitis",)),
    _c("liver_abscess", "liver abscess", r"(?:liver|hepatic) abscess\w*", parents=("liver_disease", "infection")),
    # Lungs and breathing
    _c("lung_disease", "lung disease", r"(?:lung|pulmonary|respiratory) (?:diseases?|disorders?)",
       parents=("cardiopulmonary_disease",)),
    _c("copd", "COPD", r"\bCOPD\b", r"chronic obstructive (?:pulmonary|lung|airways?) disease", r"emphysema",
       r"chronic bronchitis", parents=("lung_disease",)),
    _c("asthma", "asthma", r"asthma\w*", parents=("lung_disease",)),
    _c("bronchiectasis", "bronchiectasis", r"bronchiectas[ie]s", parents=("lung_disease",)),
    _c("cystic_fibrosis", "cystic fibrosis", r"cystic fibrosis", parents=("lung_disease",)),
    _c("interstitial_lung_disease", "scarring lung disease", r"interstitial lung diseases?", r"\bILD\b",
       r"pulmonary fibrosis", parents=("lung_disease",)),
    _c("pneumonia", "pneumonia", r"pneumoni\w*", parents=("lung_disease", "infection")),
    _c("tuberculosis", "tuberculosis", r"tubercul\w*", r"\bTB\b", parents=("infection",)),
    _c("respiratory_distress", "serious breathing trouble", r"respiratory distress", r"\bARDS\b",
       r"respiratory failure"),
    _c("dyspnea", "shortness of breath", r"dyspn(?:o)?e\w*", r"shortness of breath", r"short of breath",
       r"breathlessness", r"difficulty breathing", r"trouble breathing"),
    _c("cough", "cough", r"cough\w*"),
    _c("sleep_apnea", "sleep apnea", r"sleep apn(?:o)?ea", r"\bOSA\b", r"obstructive apn(?:o)?ea",
       r"sleep[- ]disordered breathing", r"pauses in breathing"),
    _c("snoring", "snoring", r"snor\w*"),
    _c("mechanical_ventilation", "a breathing machine", r"mechanical(?:ly)? ventilat\w*", r"intubat\w*",
       r"ventilator"),
    _c("home_oxygen", "home oxygen", r"home oxygen", r"oxygen therapy", r"supplemental oxygen"),
    # Infections and fever
    _c("infection", "an infection", r"infections?", r"infectious diseases?"),
    _c("sepsis", "sepsis", r"seps[ie]s", r"septic\w*", parents=("infection",)),
    _c("hiv", "HIV", r"\bHIV\b", r"\bAIDS\b", r"human immunodeficiency virus", parents=("immunodeficiency", "infection"),
       absent=(r"HIV[- ]negative",)),
    _c("fever", "fever", r"fevers?", r"febrile", r"pyrexi\w*"),
    _c("covid", "COVID-19", r"covid(?:-?19)?", r"sars-cov-2"),
    # Brain, nerves and mind
    _c("neurological_disease", "a nervous system disease",
       r"neurologic(?:al)? (?:diseases?|disorders?|illness\w*|conditions?)"),
    _c("cognitive_impairment", "memory or thinking problems", r"cognitive (?:impairment|decline|dysfunction|deficits?)",
       r"memory (?:loss|impairment|problems?)", r"poor memory", r"\bMCI\b", r"changes in cognition",
       parents=("neurological_disease",)),
    _c("dementia", "dementia", r"dementia", r"alzheimer'?s?(?: disease)?", parents=("cognitive_impairment",)),
    _c("epilepsy", "seizures", r"epilep\w*", r"seizures?", r"convulsi\w*", parents=("neurological_disease",)),
    _c("multiple_sclerosis", "multiple sclerosis", r"multiple sclerosis", parents=("neurological_disease",)),
    _c("parkinson", "Parkinson's disease", r"parkinson\w*", parents=("neurological_disease",)),
    _c("headache", "headaches", r"headaches?", r"migraines?", r"cephalalgia"),
    _c("neuropathy", "nerve damage", r"neuropath\w*", parents=("neurological_disease",)),
    _c("brain_injury", "brain injury", r"(?:traumatic )?brain injur\w*", r"head (?:injur\w*|trauma)", r"\bTBI\b",
       parents=("neurological_disease",)),
    _c("reduced_consciousness", "reduced consciousness", r"loss of consciousness", r"unconscious\w*", r"\bcoma\b",
       r"(?:decrease|decline|reduction) in (?:his |her |the )?level of consciousness", r"drowsy"),
    _c("spinal_cord_injury", "spinal cord injury", r"spinal cord injur\w*"),
    _c("sleep_disorder", "a sleep disorder", r"sleep disorders?", r"insomnia", r"narcolepsy"),
    _c("psychiatric_disorder", "a mental health condition", r"psychiatric (?:diseases?|disorders?|illness\w*|conditions?)",
       r"mental (?:illness\w*|disorders?|health conditions?)", r"axis (?:i|1)\b(?: disorders?)?"),
    _c("depression", "depression", r"(?:major )?depressi(?:on|ve disorders?)", r"\bMDD\b",
       parents=("psychiatric_disorder",), not_after=("st", "segment", "respiratory", "marrow", "st-segment")),
    _c("bipolar", "bipolar disorder", r"bipolar(?: disorders?| affective disorder)?", r"manic[- ]depress\w*",
       r"manic episodes?", r"\bmania\b", parents=("psychiatric_disorder",)),
    _c("psychosis", "psychosis or schizophrenia", r"schizo\w*", r"psychos[ie]s", r"psychotic(?: disorders?| symptoms?)?",
       parents=("psychiatric_disorder",)),
    _c("anxiety_disorder", "an anxiety disorder", r"anxiety disorders?", r"generali[sz]ed anxiety", r"panic disorders?",
       parents=("psychiatric_disorder",)),
    _c("eating_disorder", "an eating disorder", r"eating disorders?", r"anorexia nervosa", r"bulimi\w*",
       r"binge[- ]eating", parents=("psychiatric_disorder",)),
    _c("substance_abuse", "drug or alcohol misuse", r"substance (?:abuse|use disorders?|dependence|misuse)",
       r"drug (?:abuse|addict\w*|dependence|misuse)", r"illicit drugs?", r"recreational drugs?", r"addict\w*"),
    _c("alcohol_abuse", "alcohol misuse", r"alcohol (?:abuse|dependence|use disorders?|misuse)", r"alcoholi\w*",
       r"heavy (?:\w+ and )?(?:drinking|alcohol use)", r"excessive (?:drinking|alcohol)", parents=("substance_abuse",)),
    _c("suicidality", "thoughts of suicide", r"suicid\w*"),
    _c("intellectual_disability", "intellectual disability", r"mental retardation", r"intellectual disabilit\w*"),
    _c("smoking", "smoking", r"smok(?:er|ers|ing|es|ed)\b", r"tobacco", r"cigarettes?", r"pack[- ]years?",
       absent=(r"non[- ]?smok\w*", r"never[- ]smok\w*", r"does not smoke", r"do not smoke")),
    _c("noncompliance", "trouble following treatment plans", r"non[- ]?complian\w*", r"not complian\w*",
       r"poor (?:compliance|adherence)", r"non[- ]?adheren\w*", r"not adherent"),
    # Cancer
    _c("cancer", "cancer", r"cancers?", r"malignan\w*", r"carcinom\w*", r"neoplas\w*", r"tumou?rs?", r"metasta\w*",
       r"sarcomas?", r"oncolog\w*"),
    _c("lung_cancer", "lung cancer", r"lung (?:cancer|carcinoma|adenocarcinoma)", r"\bN?SCLC\b",
       r"(?:non-)?small[- ]cell lung", parents=("cancer",)),
    _c("breast_cancer", "breast cancer", r"breast (?:cancer|carcinoma)", parents=("cancer",)),
    _c("prostate_cancer", "prostate cancer", r"prostat(?:e|ic) (?:cancer|carcinoma|adenocarcinoma)",
       parents=("cancer",)),
    _c("colorectal_cancer", "bowel cancer", r"colo(?:n|rectal) (?:cancer|carcinoma)", parents=("cancer",)),
    _c("esophageal_cancer", "esophageal cancer", r"o?esophag(?:eal|us) (?:cancer|carcinoma|adenocarcinoma)",
       r"adenocarcinoma of the o?esophagus", parents=("cancer",)),
    _c("gastric_cancer", "stomach cancer", r"(?:gastric|stomach) (?:cancer|carcinoma)", parents=("cancer",)),
    _c("cervical_cancer", "cervical cancer", r"cervical (?:cancer|carcinoma)", parents=("cancer",)),
    _c("skin_cancer", "skin cancer", r"skin cancer", r"melanoma", r"basal cell carcinoma", parents=("cancer",)),
    _c("leukemia", "leukemia", r"leuka?emi\w*", r"\bAML\b", r"\bCLL\b", r"\bCML\b", parents=("cancer",)),
    _c("lymphoma", "lymphoma", r"lymphomas?", parents=("cancer",)),
    _c("myeloma", "myeloma", r"myelomas?", parents=("cancer",)),
    _c("chemotherapy", "chemotherapy", r"chemotherap\w*", r"\bchemo\b", r"cytotoxic (?:therapy|treatment|drugs?)"),
    _c("radiotherapy", "radiation therapy", r"radiotherap\w*", r"radiation(?: therapy| treatment)?", r"irradiat\w*"),
    _c("immunotherapy", "immunotherapy", r"immunotherap\w*", r"checkpoint inhibitors?"),
    # Stomach, gut, blood, immunity, skin
    _c("diarrhea", "diarrhea", r"diarrh(?:o)?ea\w*", r"loose stools?"),
    _c("gi_bleeding", "bleeding from the gut", r"(?:gastrointestinal|\bGI) (?:bleed\w*|h(?:a)?emorrhage)", r"mel(?:a)?ena",
       r"h(?:a)?ematemesis", parents=("bleeding",)),
    _c("bleeding", "bleeding", r"active bleeding", r"h(?:a)?emorrhag\w*", r"bleed(?:ing|s)?"),
    _c("bleeding_disorder", "a bleeding disorder", r"bleeding (?:disorders?|diathes[ie]s|tendency)", r"coagulopath\w*",
       r"h(?:a)?emophilia", r"clotting disorders?", r"coagulation disorders?"),
    _c("inflammatory_bowel_disease", "inflammatory bowel disease", r"inflammatory bowel diseases?", r"crohn'?s?(?: disease)?",
       r"ulcerative colitis"),
    _c("appendicitis", "appendicitis", r"appendicitis"),
    _c("dysphagia", "trouble swallowing", r"dysphagia", r"difficulty swallowing", r"trouble swallowing"),
    _c("varices", "enlarged veins in the food pipe", r"(?:o?esophageal )?varices"),
    _c("anemia", "anemia", r"\ban(?:a)?emi\w*"),
    _c("thrombocytopenia", "low platelets", r"thrombocytopeni\w*", r"low platelets?(?: count)?"),
    _c("neutropenia", "low white blood cells", r"neutropeni\w*", r"low white (?:blood )?cells?(?: count)?"),
    _c("sickle_cell", "sickle cell disease", r"sickle[- ]cell(?: an(?:a)?emia| disease)?"),
    _c("thalassemia", "thalassemia", r"thalass(?:a)?emi\w*"),
    _c("immunodeficiency", "a weak immune system", r"immuno-?deficien\w*", r"immune deficien\w*",
       r"immunocompromis\w*", r"immunosuppressed", r"immuno-?suppressing diseases?"),
    _c("cvid", "common variable immunodeficiency", r"common variable immun\w*(?: deficiency)?", r"\bCVID\b",
       parents=("immunodeficiency",)),
    _c("autoimmune_disease", "an autoimmune disease", r"autoimmun\w*(?: diseases?| disorders?)?"),
    _c("lupus", "lupus", r"systemic lupus(?: erythematosus)?", r"\bSLE\b", r"\blupus\b", parents=("autoimmune_disease",)),
    _c("rheumatoid_arthritis", "rheumatoid arthritis", r"rheumatoid arthritis", parents=("autoimmune_disease",)),
    _c("psoriasis", "psoriasis", r"psoria\w*", parents=("autoimmune_disease", "skin_disease")),
    _c("skin_disease", "a skin condition", r"skin (?:diseases?|disorders?|conditions?)", r"dermatitis", r"eczema"),
    _c("allergy", "an allergy", r"allerg\w*", r"hypersensitivit\w*", r"anaphyla\w*"),
    # Treatments
    _c("insulin", "insulin", r"\binsulin\b", not_before=("resistance", "resistant", "dependent", "-dependent", "sensitivity")),
    _c("corticosteroids", "steroid medicines", r"corticosteroids?", r"steroids?", r"prednis\w*", r"dexamethasone",
       r"hydrocortisone", r"methylprednisolone"),
    _c("immunosuppressants", "immune-suppressing medicines", r"immunosuppress(?:ive|ant|ion)\w*(?: (?:drugs?|agents?|therapy|medications?))?"),
    _c("antibiotics", "antibiotics", r"antibiotics?", r"antimicrobials?"),
    _c("anticoagulants", "blood thinners", r"anticoagula\w*", r"warfarin", r"heparin", r"apixaban", r"rivaroxaban",
       r"dabigatran", r"blood[- ]thinn\w*"),
    _c("antiplatelets", "antiplatelet medicines", r"antiplatelet\w*", r"aspirin", r"clopidogrel"),
    _c("beta_blockers", "beta blockers", r"beta[- ]?blockers?", r"\w+olol\b"),
    _c("calcium_channel_blockers", "calcium channel blockers", r"calcium channel blockers?", r"amlodipine", r"nifedipine",
       r"diltiazem", r"verapamil"),
    _c("arb", "angiotensin receptor blockers", r"angiotensin(?: ii)? receptor blockers?", r"\bARBs?\b", r"\w+sartan\b"),
    _c("ace_inhibitors", "ACE inhibitors", r"\bACE inhibitors?", r"\w+pril\b"),
    _c("lipid_lowering", "cholesterol-lowering medicines", r"statins?", r"\w+vastatin\b", r"lipid[- ]lowering",
       r"cholesterol[- ]lowering", r"ezetimibe"),
    _c("psychotropics", "psychiatric medicines", r"psychotropic\w*"),
    _c("antidepressants", "antidepressants", r"antidepressants?", r"\bSSRIs?\b", r"\bSNRIs?\b", r"fluoxetine",
       r"sertraline", r"(?:es)?citalopram", r"paroxetine", r"venlafaxine", r"duloxetine", r"mirtazapine", r"bupropion",
       parents=("psychotropics",)),
    _c("antipsychotics", "antipsychotic medicines", r"antipsychotics?", r"neuroleptics?", r"major tranquili[sz]ers?",
       r"haloperidol", r"olanzapine", r"quetiapine", r"risperidone", r"aripiprazole", r"clozapine", r"ziprasidone",
       parents=("psychotropics",)),
    _c("mood_stabilizers", "mood stabilisers", r"mood stabili[sz]ers?", r"lithium", r"valproate", r"lamotrigine",
       parents=("psychotropics",)),
    _c("sedatives", "sleeping or calming medicines", r"sedatives?", r"hypnotics?", r"zolpidem", r"benzodiazepines?",
       parents=("psychotropics",)),
    _c("thyroid_hormone", "thyroid hormone", r"levothyrox\w*", r"l-?thyroxine", r"thyroxine",
       r"thyroid (?:hormone )?replacement"),
    _c("iron_supplements", "iron supplements", r"iron (?:supplement\w*|therapy|tablets?)", r"ferrous \w+"),
    _c("nitrates", "nitrate medicines", r"nitrates?", r"nitroglycerin\w*"),
    _c("opioids", "opioid medicines", r"opioids?", r"opiates?", r"morphine", r"methadone"),
    _c("thrombolysis", "clot-busting treatment", r"thromboly\w*", r"\btPA\b", r"alteplase"),
    _c("transplant", "an organ transplant", r"transplant\w*"),
    _c("pci", "a coronary stent or angioplasty", r"percutaneous coronary intervention", r"\bPCI\b", r"\bPTCA\b",
       r"angioplasty", r"coronary stent\w*"),
    _c("cabg", "heart bypass surgery", r"\bCABG\b", r"coronary artery bypass"),
    _c("cardiac_catheterization", "cardiac catheterization", r"cardiac catheteri[sz]ation", r"coronary angiograph\w*"),
    _c("central_venous_catheter", "a central line", r"central ven(?:ous|a) (?:catheter\w*|puncture|access|line)",
       r"central lines?"),
    _c("hysterectomy", "removal of the womb", r"hysterectom\w*"),
    # Symptoms and findings
    _c("chest_pain", "chest pain", r"chest pain", r"chest discomfort"),
    _c("abdominal_pain", "belly pain", r"abdominal pain", r"belly pain", r"stomach pain"),
    _c("fatigue", "tiredness", r"fatigue", r"tiredness"),
    _c("edema", "swelling", r"o?edema", r"swelling"),
    _c("syncope", "fainting", r"syncope", r"faint(?:ing|ed)"),
    _c("palpitations", "palpitations", r"palpitations?"),
    _c("nausea", "nausea or vomiting", r"nausea", r"vomit\w*"),
    _c("weight_loss", "weight loss", r"weight loss", r"lost (?:a total of )?\d+ (?:pounds|lbs?|kg|kilograms)"),
    _c("sleepiness", "sleepiness", r"sleepiness", r"somnolence", r"drowsiness"),
    _c("skin_ulcer", "a skin ulcer", r"(?:skin|leg|foot|cutaneous|venous|diabetic) ulcers?", r"ulcers?"),
    _c("trauma", "an injury", r"trauma\w*", r"injur(?:y|ies|ed)", r"fractures?"),
    _c("surgery", "surgery", r"surger(?:y|ies)", r"surgical(?:ly)?", r"operated"),
    # Biomarkers and test results
    _c("hpv", "HPV", r"\bHPV\b", r"human papilloma ?virus", absent=(r"HPV[- ]negative",)),
    _c("egfr", "an EGFR mutation", r"\bEGFR\b(?: mutation\w*)?"),
    _c("alk", "an ALK change", r"\bALK\b(?: (?:rearrangement|fusion|translocation)\w*)?"),
    _c("her2", "HER2", r"\bHER-?2\b"),
    _c("brca", "a BRCA mutation", r"\bBRCA[12]?\b"),
    _c("kras", "a KRAS mutation", r"\bKRAS\b"),
    _c("pd_l1", "PD-L1", r"\bPD-?L1\b"),
)


@cache
def concept_index() -> dict[str, Concept]:
    """Concepts by key."""
    return {c.key: c for c in CONCEPTS}


@cache
def compiled_patterns() -> tuple[tuple[Concept, re.Pattern[str], re.Pattern[str] | None], ...]:
    """Each concept with one compiled regex for its spellings and one for its 'absent' spellings."""
    out = []
    for concept in CONCEPTS:
        present = re.compile(r"(?<![\w-])(?:" + "|".join(concept.patterns) + r")(?![\w])", re.I)
        absent = (
            re.compile(r"(?<![\w-])(?:" + "|".join(concept.absent_patterns) + r")(?![\w])", re.I)
            if concept.absent_patterns
            else None
        )
        out.append((concept, present, absent))
    return tuple(out)


@cache
def ancestors(key: str) -> frozenset[str]:
    """Every broader concept of this one (its parents, their parents, ...)."""
    index = concept_index()
    seen: set[str] = set()
    stack = list(index[key].parents)
    while stack:
        parent = stack.pop()
        if parent in seen or parent not in index:
            continue
        seen.add(parent)
        stack.extend(index[parent].parents)
    return frozenset(seen)


@dataclass(frozen=True)
class ConceptMatch:
    """Where a concept is written in a text, and whether that spelling itself says 'absent'."""

    key: str
    start: int
    end: int
    absent: bool


def find_concepts(text: str) -> list[ConceptMatch]:
    """All concept mentions in a text; a mention inside a longer, more specific one is dropped."""
    return list(_find_concepts(text))


@lru_cache(maxsize=16384)
def _find_concepts(text: str) -> tuple[ConceptMatch, ...]:
    found: list[ConceptMatch] = []
    lowered = text.lower()
    for concept, present, absent in compiled_patterns():
        if absent is not None:
            for m in absent.finditer(text):
                found.append(ConceptMatch(concept.key, m.start(), m.end(), True))
        for m in present.finditer(text):
            before = lowered[max(0, m.start() - 14) : m.start()].split()
            after = lowered[m.end() : m.end() + 16].replace("-", " -").split()
            if concept.not_after and before and before[-1].strip("-") in concept.not_after:
                continue
            if concept.not_before and after and (after[0] in concept.not_before or after[0].lstrip("-") in concept.not_before):
                continue
            found.append(ConceptMatch(concept.key, m.start(), m.end(), False))
    # Where mentions overlap keep the longest ("type 1 diabetes" over "diabetes", "non-smoker" over
    # "smoker"); the longer spelling is the more specific concept.
    kept: list[ConceptMatch] = []
    for match in sorted(found, key=lambda m: (-(m.end - m.start), m.start)):
        if all(match.end <= k.start or k.end <= match.start for k in kept):
            kept.append(match)
    return tuple(sorted(kept, key=lambda m: m.start))
